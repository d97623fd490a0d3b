import Testing

/// Every test that talks to a server. Serialized: timings (timeouts, concurrency peaks) and the
/// memory measurement of large transfers must not compete with each other on a small machine.
@Suite(.serialized) struct Loopback {}
