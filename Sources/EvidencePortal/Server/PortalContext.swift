import Hummingbird

/// The request context of the portal: Hummingbird's basics plus the client's IP address, which
/// sign-in throttling counts failures against (`LoginThrottle`).
public struct PortalContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address as text; nil when the connection has none (an in-process test channel).
    public let clientAddress: String?
    /// Who signed in, for the custody log's access events: `portal:USER@ADDRESS` (Basic) or
    /// `portal:token@ADDRESS`; set once the request is authenticated.
    public var principal: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        clientAddress = source.channel.remoteAddress?.ipAddress
    }
}
