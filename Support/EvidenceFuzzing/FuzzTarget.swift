import Foundation

/// One parser we own, driven by arbitrary bytes. `run` returns normally for every input the
/// parser handles as it promises (accepted, or refused with our typed error and a message that
/// names the file or field); it throws `FuzzViolation` when a promise is broken. A crash or hang
/// is the other kind of failure: libFuzzer (`make fuzz`) and the replay tests (`make test`) both
/// catch it.
public struct FuzzTarget: Sendable {
    public let name: String
    /// What the parser is, for `make fuzz`'s table and test names.
    public let summary: String
    /// Byte strings that mutations splice in (libFuzzer finds these itself; the seeded replay does not).
    public let tokens: [String]
    public let run: @Sendable (Data) throws(FuzzViolation) -> Void

    public init(name: String, summary: String, tokens: [String] = [], run: @escaping @Sendable (Data) throws(FuzzViolation) -> Void) {
        self.name = name; self.summary = summary; self.tokens = tokens; self.run = run
    }
}

/// A parser broke its contract on an input (anything short of a crash).
public struct FuzzViolation: Error, CustomStringConvertible, Sendable {
    public let target: String
    public let message: String
    public var description: String { "\(target): \(message)" }

    public init(_ target: String, _ message: String) { self.target = target; self.message = message }
}

/// Every fuzz target, by name. `fixtures` is `Fuzz/fixtures` (a real bundle, the TSA's CA).
public enum FuzzTargets {
    public static func all(fixtures: String) -> [FuzzTarget] {
        [config, rule, qed, rfc3161(fixtures: fixtures), bundleManifest(fixtures: fixtures),
         custody(fixtures: fixtures), providers, webdav, sandboxJSON]
    }

    public static func named(_ name: String, fixtures: String) -> FuzzTarget? {
        all(fixtures: fixtures).first { $0.name == name }
    }

    static func text(_ data: Data) -> String? { String(data: data, encoding: .utf8) }

    static func require(_ condition: Bool, _ target: String, _ message: @autoclosure () -> String) throws(FuzzViolation) {
        if !condition { throw FuzzViolation(target, message()) }
    }
}
