import EvidenceCore
import EvidenceHTTP
import EvidenceS3
import EvidenceStore
import EvidenceTesting
import Foundation
import Testing

/// What the S3 store does with answers moto never gives: a 503 SlowDown with `Retry-After`,
/// and XML that is malformed, hostile or missing what it must hold. Served by `ScriptedS3`.
@Suite(.serialized) struct S3AnswerTests {
    let dir = TempDirectory("s3-answers")

    func store(_ server: ScriptedS3) throws(StoreError) -> S3ObjectStore {
        try S3ObjectStore(home: dir.path + "/home",
                          settings: S3StoreSettings(endpoint: S3Endpoint(url: server.url, bucket: "b", region: "us-east-1",
                                                                         accessKey: "AKIDEXAMPLE", secretKey: "wJalrXUtnFEMI")))
    }

    /// The listing `body` answers, and the `StoreError` text `list()` throws for it.
    func listingError(_ body: String) throws -> String {
        let server = try ScriptedS3 { _, _, _ in .xml(body) }
        defer { server.stop() }
        do throws(StoreError) {
            let listed = try store(server).list()
            Issue.record("listed \(listed) from a bad answer")
            return ""
        } catch {
            guard case .remote(let path, _) = error else { Issue.record("not a remote error: \(error)"); return "" }
            #expect(path == "s3://b/sha256")
            return error.description
        }
    }

    @Test func a503SlowDownWithRetryAfterIsWaitedOutThenRetried() throws {
        let server = try ScriptedS3 { _, _, number in
            number == 1
                ? ScriptedS3.Answer(status: 503, headers: [("Retry-After", "2"), ("Content-Type", "application/xml")],
                                    body: Data("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>".utf8))
                : ScriptedS3.Answer(status: 404)
        }
        defer { server.stop(); OriginPause.shared.reset(origin: server.url) }
        let digest = SHA256Hasher.hash(Data("absent".utf8))

        let size = try store(server).objectSize(digest)

        #expect(size == nil)
        let seen = server.requests
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { $0.method == "HEAD" })
        if seen.count == 2 {
            let gap = seen[1].at - seen[0].at
            // The old loop waited 0.2 s whatever the server said.
            #expect(gap >= .milliseconds(1_950), "retried after \(gap), not after the 2 s asked for")
        }
    }

    @Test func aSlowDownPausesEveryRequestToTheEndpoint() throws {
        let server = try ScriptedS3 { _, _, number in
            number == 1 ? ScriptedS3.Answer(status: 503, headers: [("Retry-After", "1")]) : ScriptedS3.Answer(status: 404)
        }
        defer { server.stop(); OriginPause.shared.reset(origin: server.url) }
        _ = try store(server).objectSize(SHA256Hasher.hash(Data("a".utf8)))
        // Noted for the origin: another request (another store, another thread) waits too.
        OriginPause.shared.note(HTTPResponse(status: 503, headers: ["retry-after": "1"]), url: server.url)
        let start = ContinuousClock.now
        _ = try store(server).objectSize(SHA256Hasher.hash(Data("b".utf8)))
        #expect(ContinuousClock.now - start >= .milliseconds(950))
        #expect(server.requests.count == 3)
    }

    @Test func aDocumentTypeDeclarationIsRefusedNeverExpanded() throws {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
            <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
            <ListBucketResult><Contents><Key>&lol3;</Key><Size>1</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>
            """
        #expect(try listingError(laughs).contains("document type declaration"))
    }

    @Test func anExternalEntityIsRefused() throws {
        let xxe = """
            <?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
            <ListBucketResult><Contents><Key>&x;</Key><Size>1</Size></Contents></ListBucketResult>
            """
        #expect(try listingError(xxe).contains("document type declaration"))
    }

    @Test func anAnswerThatIsNotXMLIsNamedSo() throws {
        #expect(try listingError("<ListBucketResult><Contents><Key>sha256/x</Key>").contains("not well-formed XML"))
        #expect(try listingError("OK").contains("not well-formed XML"))
        #expect(try listingError("<ListBucketResult>&undefined;</ListBucketResult>").contains("not well-formed XML"))
    }

    @Test func aListedObjectWithoutItsKeyOrSizeIsAnError() throws {
        #expect(try listingError("<ListBucketResult><Contents><Size>3</Size></Contents></ListBucketResult>").contains("has no <Key>"))
        #expect(try listingError("<ListBucketResult><Contents><Key>sha256/a</Key></Contents></ListBucketResult>").contains("has no <Size>"))
        #expect(try listingError("<ListBucketResult><Contents><Key>k</Key><Size>many</Size></Contents></ListBucketResult>").contains("not a number"))
    }

    @Test func aTruncatedListingWithoutAContinuationTokenIsAnError() throws {
        // Stopping there would report a partial listing as the whole bucket (fsck would miss objects).
        let body = "<ListBucketResult><Contents><Key>sha256/a</Key><Size>1</Size></Contents><IsTruncated>true</IsTruncated></ListBucketResult>"
        #expect(try listingError(body).contains("has no <NextContinuationToken>"))
    }

    @Test func namespacesCDATAAndEntitiesAreReadAsXML() throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">
              <s3:Contents><s3:Key><![CDATA[sha256/a<b]]></s3:Key><s3:Size>5</s3:Size></s3:Contents>
              <s3:Contents><s3:Key>sha256/c&amp;d&#x41;</s3:Key><s3:Size>7</s3:Size></s3:Contents>
              <s3:IsTruncated>false</s3:IsTruncated>
            </s3:ListBucketResult>
            """
        let server = try ScriptedS3 { _, _, _ in .xml(body) }
        defer { server.stop() }
        let listed = try store(server).list()
        #expect(listed.map(\.key) == ["sha256/a<b", "sha256/c&dA"])
        #expect(listed.map(\.size) == [5, 7])
    }

    @Test func aLegalHoldAnswerThatIsNotXMLIsAnErrorNotAHoldOff() throws {
        let server = try ScriptedS3 { _, _, _ in .xml("<LegalHold><Status>ON</Status>") }
        defer { server.stop() }
        do {
            let on = try store(server).legalHold(SHA256Hasher.hash(Data("x".utf8)))
            Issue.record("read legal hold \(on) from a cut answer")
        } catch {
            #expect("\(error)".contains("legal hold not read") && "\(error)".contains("not well-formed XML"), "\(error)")
        }
    }

    @Test func anErrorBodyThatIsNotXMLStillGivesTheStatus() throws {
        let server = try ScriptedS3 { _, _, _ in ScriptedS3.Answer(status: 403, body: Data("<html>denied".utf8)) }
        defer { server.stop() }
        do {
            _ = try store(server).list()
            Issue.record("listed from a 403")
        } catch {
            #expect("\(error)".contains("HTTP 403"), "\(error)")
        }
    }
}
