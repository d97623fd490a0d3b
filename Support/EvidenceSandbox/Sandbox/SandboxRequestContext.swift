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

    /// Provider emulations take file chunks (Box parts are 8 MiB, Dropbox single uploads up to
    /// 150 MB); handlers that expect small JSON collect with their own, smaller limit.
    public var maxUploadSize: Int { 256 * 1024 * 1024 }

    /// The limit for JSON request bodies (QED reports, provider RPC arguments).
    public static let maxJSONBody = 4 * 1024 * 1024
}
