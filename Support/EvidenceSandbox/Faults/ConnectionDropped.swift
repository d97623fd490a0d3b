/// Thrown by fault injection after it has closed the request's connection. Nothing can be
/// answered any more; middleware above only records the drop and lets the error through,
/// and Hummingbird's attempt to write its 500 fails on the closed channel, unseen.
public struct ConnectionDropped: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "connection dropped by fault injection" }
}
