import Foundation
import Hummingbird

/// Placeholder: routes under `/dropbox/` are added by the full emulation.
public final class DropboxEmulator: Sendable {
    let env: ProviderEnvironment

    public init(environment: ProviderEnvironment) throws {
        self.env = environment
    }

    public func addRoutes(to router: Router<SandboxRequestContext>) {}
}
