import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

extension SandboxServer {
    /// Runs the sandbox in this process for the duration of `body`, which receives the base
    /// URL (`http://127.0.0.1:PORT`). The server is shut down gracefully when `body` returns
    /// or throws; its error, if any, is rethrown.
    public func withRunning<T: Sendable>(
        logger: Logger = Logger(label: "evidence-sandbox"),
        _ body: @Sendable (URL) async throws -> T
    ) async throws -> T {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = makeApplication(logger: logger) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                try await tasks.waitForAll()
                throw SandboxError.stateDirectory("server stopped before listening")
            }
            let url = URL(string: "http://\(options.host):\(port)")!
            do {
                let value = try await body(url)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return value
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }
}
