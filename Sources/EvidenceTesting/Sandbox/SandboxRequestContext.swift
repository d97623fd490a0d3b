import Hummingbird
import NIOCore

/// Request context for every sandbox route. Besides Hummingbird's core storage it keeps the
/// connection's channel, so fault injection can close the connection without answering.
public struct SandboxRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP connection this request arrived on.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// The peer's IP address (`127.0.0.1`), or `"unknown"`.
    public var clientAddress: String {
        channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// QED report uploads are small JSON documents.
    public var maxUploadSize: Int { 4 * 1024 * 1024 }
}
