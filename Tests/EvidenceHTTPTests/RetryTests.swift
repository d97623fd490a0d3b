import EvidenceHTTP
import Foundation
import Synchronization
import Testing
import EvidenceTesting

extension Loopback {
    @Suite struct Retries {
        @Test func serviceUnavailableIsRetriedUntilSuccess() async throws {
            let server = try TestServer(routes: ["/r": { _, hit in
                hit <= 2 ? .respond(503, body: Data("busy".utf8)) : .respond(200, body: Data("ok".utf8))
            }])
            defer { server.stop() }

            let response = try await makeClient().execute(HTTPRequest(url: server.url("/r")))

            #expect(response.status == 200)
            #expect(response.body == Data("ok".utf8))
            #expect(server.hits("/r") == 3)
        }

        @Test func droppedConnectionsAreRetriedUntilSuccess() async throws {
            let server = try TestServer(routes: ["/d": { _, hit in hit <= 2 ? .drop : .respond(200) }])
            defer { server.stop() }

            let response = try await makeClient().execute(HTTPRequest(method: "PUT", url: server.url("/d"),
                                                                      body: .data(Data("payload".utf8))))

            #expect(response.status == 200)
            #expect(server.hits("/d") == 3)
            #expect(server.requests.allSatisfy { $0.body == Data("payload".utf8) })
        }

        @Test func droppedConnectionWithoutRetryIsAGotNothingTransportError() async throws {
            let server = try TestServer(routes: ["/d": { _, _ in .drop }])
            defer { server.stop() }

            let error = await httpError { try await makeClient().send(HTTPRequest(url: server.url("/d"))) }

            #expect(error?.kind == .transport(code: 52, name: "CURLE_GOT_NOTHING"))
            #expect(error?.isRetryable == true)
        }

        @Test func tooManyRequestsWaitsForRetryAfter() async throws {
            let server = try TestServer(routes: ["/limited": { _, hit in
                hit == 1 ? .respond(429, headers: [("Retry-After", "1")]) : .respond(200)
            }])
            defer { server.stop() }

            let (response, elapsed) = try await timed {
                try await makeClient().execute(HTTPRequest(url: server.url("/limited")))
            }

            #expect(response.status == 200)
            #expect(server.hits("/limited") == 2)
            #expect(elapsed >= 0.95, "waited only \(elapsed)s")
        }

        @Test func aPauseHoldsEveryRequestToThatOriginNotOnlyTheRetriedOne() async throws {
            // One worker is told 429 + Retry-After: 6; another worker's request to the same
            // server must wait too (no retry storm), one to another server must not. Six
            // seconds leave a loaded machine room: the checks compare with the pause's end,
            // not with a fixed "quick".
            let server = try TestServer(routes: [
                "/limited": { _, hit in hit == 1 ? .respond(429, headers: [("Retry-After", "6")]) : .respond(200) },
                "/other": { _, _ in .respond(200) },
            ])
            defer { server.stop() }
            let elsewhere = try TestServer(routes: ["/free": { _, _ in .respond(200) }])
            defer { elsewhere.stop() }
            let client = makeClient()
            let first = Task { try await client.execute(HTTPRequest(url: server.url("/limited"))) }
            // The 429 has reached the client (a fixed sleep was too short on a loaded machine).
            #expect(await waitUntil(timeout: 5) { OriginPause.shared.remaining(for: server.url("/")) > 0 })
            let pauseEnds = Date().addingTimeInterval(OriginPause.shared.remaining(for: server.url("/")))

            let free = try await client.send(HTTPRequest(url: elsewhere.url("/free")))
            #expect(free.status == 200)
            #expect(Date() < pauseEnds, "another origin is not paused: its request ended after the pause")
            let (other, held) = try await timed { try await client.send(HTTPRequest(url: server.url("/other"))) }
            #expect(other.status == 200)
            #expect(Date() >= pauseEnds, "the other request went inside the 6 s the server asked for (after \(held)s)")
            #expect(try await first.value.status == 200)
            #expect(server.hits("/limited") == 2)
        }

        @Test func curlStillResendsARequestTheServerDroppedOnAKeptAliveConnection() async throws {
            // A kept-alive connection the server closed before answering: curl sends the
            // request again on a fresh connection, within the same attempt. That is how a
            // client survives a server that closes idle connections; it must keep working.
            let server = try TestServer(keepAlive: true, routes: [
                "/a": { _, _ in .respond(200) },
                "/b": { _, hit in hit == 1 ? .drop : .respond(200) },
            ])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 1 }   // one handle: /b goes on /a's connection
            #expect(try await client.send(HTTPRequest(url: server.url("/a"))).status == 200)
            let response = try await client.send(HTTPRequest(method: "POST", url: server.url("/b"), body: .data(Data("x".utf8))))
            #expect(response.status == 200)
            #expect(server.hits("/b") == 2)
            #expect(server.requests.map(\.connection) == [1, 1, 2], "\(server.requests.map(\.connection))")
        }

        @Test func curlsOwnResendWaitsOutAPauseNotedWhileTheFirstSendWasDropped() async throws {
            // The fault soak's one early request: curl resent a dropped request at once, while
            // a 429 + Retry-After to another request had paused the origin. Here the pause is
            // noted by the server itself as it drops the first send; the resend must come after it.
            let arrivals = ArrivalTimes()
            let server = try TestServer(keepAlive: true, routes: [
                "/a": { _, _ in .respond(200) },
            ])
            defer { server.stop() }
            let origin = server.url("/")
            defer { OriginPause.shared.reset(origin: origin) }
            server.route("/b") { _, hit in
                arrivals.note()
                guard hit == 1 else { return .respond(200) }
                OriginPause.shared.note(HTTPResponse(status: 429, headers: ["retry-after": "1"]), url: origin)
                return .drop
            }
            let client = makeClient { $0.maxConcurrentTransfers = 1 }
            #expect(try await client.send(HTTPRequest(url: server.url("/a"))).status == 200)
            let response = try await client.send(HTTPRequest(method: "POST", url: server.url("/b"), body: .data(Data("x".utf8))))
            #expect(response.status == 200)
            #expect(server.hits("/b") == 2, "sent \(server.hits("/b")) times")
            let times = arrivals.all
            if times.count == 2 {
                #expect(times[1].timeIntervalSince(times[0]) >= 0.95, "resent \(times[1].timeIntervalSince(times[0])) s after the drop, inside the 1 s pause")
            }
        }

        @Test func aRequestQueuedForATransferSlotWaitsOutAPauseNotedMeanwhile() async throws {
            // One transfer slot: /other passes the pause check (none yet) and queues behind
            // /limited, whose 429 + Retry-After: 2 arrives while /other waits for the slot.
            let arrivals = ArrivalTimes()
            let server = try TestServer(routes: [
                "/limited": { _, _ in .delay(0.5, .respond(429, headers: [("Retry-After", "2")])) },
                "/other": { _, _ in arrivals.note(); return .respond(200) },
            ])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 1 }
            let first = Task { try await client.send(HTTPRequest(url: server.url("/limited"))) }
            #expect(await waitUntil(timeout: 5) { server.hits("/limited") == 1 })
            let second = Task { try await client.send(HTTPRequest(url: server.url("/other"))) }
            let limited = try await first.value
            let answered = Date()
            #expect(limited.status == 429)
            #expect(try await second.value.status == 200)
            let sent = try #require(arrivals.first)
            #expect(sent.timeIntervalSince(answered) >= 1.5, "the queued request went \(sent.timeIntervalSince(answered)) s after the 429, inside its 2 s")
        }

        @Test func aRequestQueuedForATransferSlotIsThrownPausedWhenAPauseLongerThanAllowedIsNotedMeanwhile() async throws {
            // As above, but the 429 asks for 3 s and the policy waits at most 1 s: the queued
            // request is answered `.paused` at its slot and never sent. (The send-time guard in
            // `Transfer` alone would hold it for the 3 s and then send it.)
            let server = try TestServer(routes: [
                "/limited": { _, _ in .delay(0.5, .respond(429, headers: [("Retry-After", "3")])) },
                "/other": { _, _ in .respond(200) },
            ])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 1; $0.retry.maxRetryAfter = 1 }
            let first = Task { try await client.send(HTTPRequest(url: server.url("/limited"))) }
            #expect(await waitUntil(timeout: 5) { server.hits("/limited") == 1 })
            let second = Task { await httpError { try await client.send(HTTPRequest(url: server.url("/other"))) } }
            #expect(try await first.value.status == 429)
            let error = await second.value
            #expect(error?.kind == .paused, "\(String(describing: error))")
            #expect((error?.retryAfter ?? 0) > 1)
            #expect(server.hits("/other") == 0, "sent \(server.hits("/other")) times")
        }

        @Test func aRequestWaitingOutAPauseAtItsSlotAlsoWaitsOutAnExtensionNotedMeanwhile() async throws {
            // Two slots. /first answers 429 + Retry-After: 1 after 0.3 s; /queued, third in line,
            // then takes that slot and waits out the pause there. While it waits, /second answers
            // 429 + Retry-After: 2, extending the pause: /queued must wait for the new end too.
            let arrivals = ArrivalTimes()
            let extended = ArrivalTimes()
            let server = try TestServer(routes: [
                "/first": { _, _ in .delay(0.3, .respond(429, headers: [("Retry-After", "1")])) },
                "/second": { _, _ in .delay(0.7, .respond(429, headers: [("Retry-After", "2")])) },
                "/queued": { _, _ in arrivals.note(); return .respond(200) },
            ])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 2 }
            let first = Task { try await client.send(HTTPRequest(url: server.url("/first"))) }
            let second = Task {
                let r = try await client.send(HTTPRequest(url: server.url("/second")))
                extended.note()
                return r
            }
            #expect(await waitUntil(timeout: 5) { server.hits("/first") == 1 && server.hits("/second") == 1 })
            let queued = Task { try await client.send(HTTPRequest(url: server.url("/queued"))) }
            #expect(try await first.value.status == 429)
            #expect(try await second.value.status == 429)
            #expect(try await queued.value.status == 200)
            let sent = try #require(arrivals.first)
            let answered = try #require(extended.first)
            #expect(sent.timeIntervalSince(answered) >= 1.75,
                    "the queued request went \(sent.timeIntervalSince(answered)) s after the extending 429, inside its 2 s")
        }

        @Test func anAnswersExcerptMasksTheCredentialsOfItsRequest() async throws {
            // A server that quotes the token back in its error, as some do.
            let server = try TestServer(routes: [
                "/echo": { request, _ in .respond(401, body: Data("invalid_token: \(request.header("authorization") ?? "") was refused".utf8)) },
            ])
            defer { server.stop() }
            let r = try await makeClient().send(HTTPRequest(url: server.url("/echo"), headers: [("Authorization", "Bearer SECRET-TOKEN-42ab")]))
            #expect(r.status == 401)
            #expect(!r.excerpt.contains("SECRET-TOKEN-42ab"), "\(r.excerpt)")
            #expect(r.excerpt.contains("invalid_token"))
            // The response keeps its request's headers for that mask; printed or dumped whole
            // (its body shows as a byte count), it shows none of them.
            var dumped = ""
            dump(r, to: &dumped)
            for text in [String(describing: r), String(reflecting: r), dumped] {
                #expect(!text.contains("SECRET-TOKEN-42ab"), "\(text)")
            }
        }

        @Test func aPauseLongerThanAllowedThrowsPausedWithoutSending() async throws {
            let server = try TestServer(routes: [
                "/later": { _, _ in .respond(503, headers: [("Retry-After", "3600")]) },
                "/other": { _, _ in .respond(200) },
            ])
            defer { server.stop() }
            let client = makeClient()
            _ = await httpError { try await client.execute(HTTPRequest(url: server.url("/later"))) }
            let error = await httpError { try await client.execute(HTTPRequest(url: server.url("/other"))) }
            #expect(error?.kind == .paused)
            #expect(error?.isRetryable == true)
            #expect((error?.retryAfter ?? 0) > 3500)
            #expect(error?.description.contains("not sent: the server asked us to wait") == true)
            #expect(server.hits("/other") == 0)
        }

        @Test func badRequestIsNotRetried() async throws {
            let server = try TestServer(routes: ["/v1/reports/": { _, _ in
                .respond(400, body: Data(#"{"original_created_at":["This field is required."]}"#.utf8))
            }])
            defer { server.stop() }

            let error = await httpError {
                try await makeClient().execute(HTTPRequest(method: "POST", url: server.url("/v1/reports/"),
                                                           body: .data(Data("{}".utf8))))
            }

            #expect(error?.kind == .status(400))
            #expect(error?.isRetryable == false)
            #expect(error?.response?.status == 400)
            #expect(error?.message.contains("original_created_at") == true)
            #expect(error?.description.hasPrefix("POST \(server.url("/v1/reports/")): HTTP 400: ") == true)
            #expect(server.hits("/v1/reports/") == 1)
        }

        @Test func exhaustedRetriesThrowTheLastStatus() async throws {
            let server = try TestServer(routes: ["/down": { _, _ in .respond(503, headers: [("Retry-After", "0")]) }])
            defer { server.stop() }
            let client = makeClient { $0.retry.maxAttempts = 3 }

            let error = await httpError { try await client.execute(HTTPRequest(url: server.url("/down"))) }

            #expect(error?.kind == .status(503))
            #expect(error?.isRetryable == true)
            #expect(error?.retryAfter == 0)
            #expect(server.hits("/down") == 3)
        }

        @Test func customClassificationDecides() async throws {
            // ownCloud OCS v1 answers HTTP 200 on failure; Box answers 202 + Retry-After "not yet".
            let server = try TestServer(routes: [
                "/ocs": { _, _ in .respond(200, body: Data(#"{"ocs":{"meta":{"statuscode":404}}}"#.utf8)) },
                "/commit": { _, hit in hit == 1 ? .respond(202, headers: [("Retry-After", "0")]) : .respond(201) },
            ])
            defer { server.stop() }
            let client = makeClient()

            let error = await httpError {
                try await client.execute(HTTPRequest(url: server.url("/ocs"))) { response in
                    String(decoding: response.body, as: UTF8.self).contains(#""statuscode":100"#) ? .success : .permanent
                }
            }
            let committed = try await client.execute(HTTPRequest(method: "POST", url: server.url("/commit"))) { response in
                response.status == 202 ? .retryable(retryAfter: nil) : HTTPClient.defaultClassification(response)
            }

            #expect(error?.kind == .status(200))
            #expect(server.hits("/ocs") == 1)
            #expect(committed.status == 201)
            #expect(server.hits("/commit") == 2)
        }

        @Test func beforeRetryChoosesWhatIsSentAgainAndCanStop() async throws {
            // A grant that must not be re-sent blindly: the caller swaps the request, then stops.
            let server = try TestServer(routes: [
                "/old": { _, _ in .respond(503) },
                "/new": { _, _ in .respond(503) },
            ])
            defer { server.stop() }
            let client = makeClient()
            let asked = Mutex(0)
            let error = await httpError {
                try await client.execute(HTTPRequest(method: "POST", url: server.url("/old")), beforeRetry: { failure in
                    let n = asked.withLock { $0 += 1; return $0 }
                    #expect(failure.kind == .status(503))
                    return n == 1 ? .send(HTTPRequest(method: "POST", url: server.url("/new"))) : .stop
                })
            }
            #expect(error?.kind == .status(503))
            #expect(asked.withLock { $0 } == 2)
            #expect(server.hits("/old") == 1)
            #expect(server.hits("/new") == 1, "the loop sent something other than what beforeRetry chose, or kept going after .stop")
        }

        @Test func retryAfterBeyondTheLimitIsThrownAtOnce() async throws {
            let server = try TestServer(routes: ["/later": { _, _ in .respond(503, headers: [("Retry-After", "3600")]) }])
            defer { server.stop() }

            let (error, elapsed) = await timed {
                await httpError { try await makeClient().execute(HTTPRequest(url: server.url("/later"))) }
            }

            #expect(error?.kind == .status(503))
            #expect(error?.retryAfter == 3600)
            #expect(error?.description.contains("(retry after 3600s)") == true)
            #expect(server.hits("/later") == 1)
            #expect(elapsed < 5)
        }

        @Test func timeoutsAreRetried() async throws {
            let server = try TestServer(routes: ["/slow": { _, _ in .hang }])
            defer { server.stop() }
            let client = makeClient { $0.totalTimeout = 0.3; $0.retry.maxAttempts = 2 }

            let error = await httpError { try await client.execute(HTTPRequest(url: server.url("/slow"))) }

            #expect(error?.kind == .timeout)
            #expect(server.hits("/slow") == 2)
        }
    }
}

/// When a test server's route was reached, for checks against the client's own clock.
final class ArrivalTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [Date] = []
    func note() { lock.lock(); times.append(Date()); lock.unlock() }
    var first: Date? { lock.lock(); defer { lock.unlock() }; return times.first }
    var all: [Date] { lock.lock(); defer { lock.unlock() }; return times }
}
