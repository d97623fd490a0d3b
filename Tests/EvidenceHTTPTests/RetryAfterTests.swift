import EvidenceHTTP
import Foundation
import Testing

@Suite struct RetryAfterTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT
    let reference = Date(timeIntervalSince1970: 784_111_777)

    @Test func parsesDelaySeconds() {
        #expect(RetryAfter.seconds("120") == 120)
        #expect(RetryAfter.seconds(" 3 ") == 3)
        #expect(RetryAfter.seconds("0") == 0)
    }

    @Test func rejectsWhatIsNeitherSecondsNorADate() {
        for value in ["", "soon", "-1", "1e3", "Sun, 06 Nov 1994", "Sun, 32 Nov 1994 08:49:37 GMT", "12:00:00"] {
            #expect(RetryAfter.seconds(value, now: reference) == nil, "\(value)")
        }
    }

    @Test func parsesIMFFixdateRelativeToNow() {
        let now = reference.addingTimeInterval(-30)
        #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 30)
        let later = Date(timeIntervalSince1970: 1_767_225_600)  // Thu, 01 Jan 2026 00:00:00 GMT
        #expect(RetryAfter.seconds("Thu, 01 Jan 2026 00:00:05 GMT", now: later) == 5)
    }

    @Test func parsesObsoleteDateForms() {
        let now = reference.addingTimeInterval(-10)
        #expect(RetryAfter.seconds("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == 10)
        #expect(RetryAfter.seconds("Sun Nov  6 08:49:37 1994", now: now) == 10)
    }

    @Test func dateInThePastMeansNoWait() {
        #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: reference.addingTimeInterval(3600)) == 0)
    }
}
