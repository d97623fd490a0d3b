@testable import EvidenceHTTP
import Foundation
import Testing
import EvidenceTesting

extension Loopback {
    @Suite struct Concurrency {
        @Test func atMostMaxConcurrentTransfersRunAtOnce() async throws {
            let server = try TestServer(routes: ["/slow": { _, _ in .delay(0.25, .respond(200)) }])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 2 }

            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<10 {
                    group.addTask { (try? await client.send(HTTPRequest(url: server.url("/slow"))))?.status ?? -1 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }

            #expect(statuses == Array(repeating: 200, count: 10))
            #expect(server.hits("/slow") == 10)
            #expect(server.peakInFlight("/slow") == 2)
        }

        /// With 2 CPU cores the cooperative pool has 2 threads: 8 parallel transfers prove that
        /// transfers wait on continuations, not on blocked cooperative threads.
        @Test func transfersDoNotOccupyCooperativeThreads() async throws {
            let server = try TestServer(routes: ["/slow": { _, _ in .delay(1.0, .respond(200)) }])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 8 }

            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask { (try? await client.send(HTTPRequest(url: server.url("/slow"))))?.status ?? -1 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }

            #expect(statuses == Array(repeating: 200, count: 8))
            // The server's own count: all 8 were in flight at once, which 2 blocked cooperative
            // threads could not do (at most 2). A wall-clock bound said the same and failed on a
            // loaded machine (3.76 s against 3.5 s in a fresh-clone run).
            #expect(server.peakInFlight("/slow") == 8)
        }

        @Test func totalTimeoutAbortsAServerThatNeverAnswers() async throws {
            let server = try TestServer(routes: ["/hang": { _, _ in .hang }])
            defer { server.stop() }
            let client = makeClient { $0.totalTimeout = 1 }

            let (error, elapsed) = await timed { await httpError { try await client.send(HTTPRequest(url: server.url("/hang"))) } }

            #expect(error?.kind == .timeout)
            #expect(error?.isRetryable == true)
            #expect(elapsed >= 0.9 && elapsed < 4, "took \(elapsed)s")
        }

        @Test func cancellingTheTaskAbortsARunningTransfer() async throws {
            let server = try TestServer(routes: ["/hang": { _, _ in .hang }])
            defer { server.stop() }
            let client = makeClient()
            let task = Task { await httpError { try await client.send(HTTPRequest(url: server.url("/hang"))) } }
            #expect(await waitUntil(timeout: 5) { server.hits("/hang") == 1 })

            let (error, elapsed) = await timed {
                task.cancel()
                return await task.value
            }

            #expect(error?.kind == .cancelled)
            #expect(error?.isRetryable == false)
            #expect(elapsed < 2.5, "cancellation took \(elapsed)s")
            #expect(await waitUntil(timeout: 5) { server.inFlightNow("/hang") == 0 })  // curl closed the connection
        }

        @Test func cancellingAQueuedRequestAnswersAtOnceAndNeverSendsIt() async throws {
            let server = try TestServer(routes: ["/hang": { _, _ in .hang }, "/queued": { _, _ in .respond(200) }])
            defer { server.stop() }
            let client = makeClient { $0.maxConcurrentTransfers = 1 }
            let blocker = Task { await httpError { try await client.send(HTTPRequest(url: server.url("/hang"))) } }
            #expect(await waitUntil(timeout: 5) { server.hits("/hang") == 1 })
            let queued = Task { await httpError { try await client.send(HTTPRequest(url: server.url("/queued"))) } }
            // The request waits for the one transfer slot (it never reaches the server).
            #expect(await waitUntil(timeout: 5) { client.queuedTransfers == 1 })

            let (error, elapsed) = await timed {
                queued.cancel()
                return await queued.value
            }
            blocker.cancel()
            _ = await blocker.value

            #expect(error?.kind == .cancelled)
            #expect(elapsed < 1.5)  // the running transfer it queued behind would take 30 s
            #expect(server.hits("/queued") == 0)
        }

        @Test func alreadyCancelledTaskNeverReachesTheServer() async throws {
            let server = try TestServer(routes: ["/x": { _, _ in .respond(200) }])
            defer { server.stop() }
            let client = makeClient()

            let error = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await httpError { try await client.send(HTTPRequest(url: server.url("/x"))) }
            }.value

            #expect(error?.kind == .cancelled)
            #expect(server.hits("/x") == 0)
        }

        @Test func cancellingDuringTheRetryWaitStopsRetrying() async throws {
            let server = try TestServer(routes: ["/busy": { _, _ in .respond(503, headers: [("Retry-After", "20")]) }])
            defer { server.stop() }
            let logs = LogCapture()
            let client = makeClient(logger: logs.logger)
            let task = Task { await httpError { try await client.execute(HTTPRequest(url: server.url("/busy"))) } }
            #expect(await waitUntil(timeout: 5) { server.hits("/busy") == 1 })
            // In its retry wait: the client logs the retry just before it starts waiting.
            #expect(await waitUntil(timeout: 30) { logs.lines.contains { $0.contains("failed; retrying") } }, "\(logs.lines)")

            let (error, elapsed) = await timed {
                task.cancel()
                return await task.value
            }

            #expect(error?.kind == .cancelled)
            #expect(elapsed < 5)  // the server asked for 20 s; generous for a loaded 2-core CI machine
            #expect(server.hits("/busy") == 1)
        }
    }
}

