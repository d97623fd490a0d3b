import EvidencePortal
import Foundation
import Testing

@Suite("Portal authentication")
struct AuthTests {
    func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    @Test("the bearer token and the Basic user+password are accepted; anything else is not")
    func acceptsOnlyTheCredentials() throws {
        let auth = try PortalAuth(token: "s3cret-token", user: "auditor", password: "pa:ss word")
        #expect(auth.allows(authorization: "Bearer s3cret-token"))
        #expect(auth.allows(authorization: "bearer s3cret-token"))
        #expect(auth.allows(authorization: basic("auditor", "pa:ss word")))
        #expect(!auth.allows(authorization: nil))
        #expect(!auth.allows(authorization: ""))
        #expect(!auth.allows(authorization: "Bearer s3cret-tokeN"))
        #expect(!auth.allows(authorization: "Bearer s3cret-token-and-more"))
        #expect(!auth.allows(authorization: "Bearer "))
        #expect(!auth.allows(authorization: basic("auditor", "pa:ss wordx")))
        #expect(!auth.allows(authorization: basic("Auditor", "pa:ss word")))
        #expect(!auth.allows(authorization: "Basic not-base64!"))
        #expect(!auth.allows(authorization: "Basic " + Data("no-colon".utf8).base64EncodedString()))
        #expect(!auth.allows(authorization: "Digest username=auditor"))
        #expect(!auth.allows(authorization: "s3cret-token"))
    }

    @Test("with only a token configured, Basic is refused; with only Basic, bearer is refused")
    func methodsAreSeparate() throws {
        let tokenOnly = try PortalAuth(token: "tok", user: nil, password: nil)
        #expect(!tokenOnly.allows(authorization: basic("", "tok")))
        let basicOnly = try PortalAuth(token: nil, user: "u", password: "p")
        #expect(!basicOnly.allows(authorization: "Bearer p"))
        #expect(basicOnly.allows(authorization: basic("u", "p")))
    }

    @Test("a portal without any credential cannot be built")
    func needsAMethod() {
        #expect(throws: PortalAuth.AuthError.self) { try PortalAuth(token: nil, user: nil, password: nil) }
        #expect(throws: PortalAuth.AuthError.self) { try PortalAuth(token: nil, user: "u", password: nil) }
    }
}
