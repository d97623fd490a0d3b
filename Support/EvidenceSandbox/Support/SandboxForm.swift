import Hummingbird

/// `application/x-www-form-urlencoded` text (a form body, a query), read by Hummingbird's form
/// decoder (`+` is a space, escapes decoded) for every emulation. Nil when it is malformed: a bad
/// escape or a field given twice, which the emulations refuse with their service's 400.
enum SandboxForm {
    static func fields(_ text: String) -> [String: String]? {
        try? URLEncodedFormDecoder().decode([String: String].self, from: text)
    }
}
