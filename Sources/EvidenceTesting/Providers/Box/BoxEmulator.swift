import Foundation
import Hummingbird

/// Placeholder: routes under `/box/` are added by the full emulation.
public final class BoxEmulator: Sendable {
    let env: ProviderEnvironment

    public init(environment: ProviderEnvironment) throws {
        self.env = environment
    }

    public func addRoutes(to router: Router<SandboxRequestContext>) {}
}
