import Foundation

/// Checks a `POST /v1/reports/` body the way QED's serializer does, collecting every field's
/// problems at once (DRF answers all of them in one 400), in the serializer's field order.
enum QEDReportValidator {
    struct Draft: Sendable {
        var hash: String
        var provableFiles: [(hash: String, fileName: String)]
        var originalCreatedAt: Date
        var name: String
        var note: String
        var email: String
        var metaData: JSONValue
    }

    static let required = "This field is required."
    static let notNull = "This field may not be null."
    static let notBlank = "This field may not be blank."
    static let notString = "Not a valid string."
    static let invalidHash = "Invalid SHA-256 hash."
    static let invalidEmail = "Enter a valid email address."
    static let maxNameLength = 255

    static func validate(_ body: JSONValue) -> Result<Draft, QEDError> {
        guard case .object = body else {
            return .failure(.validation(.object([("non_field_errors", .array([
                .string("Invalid data. Expected a dictionary, but got \(body.typeName).")
            ]))])))
        }
        var errors: [(String, JSONValue)] = []
        func fail(_ field: String, _ messages: String...) {
            errors.append((field, .array(messages.map { .string($0) })))
        }

        // hash
        var hash = ""
        switch stringField(body["hash"], required: true) {
        case .success(let s?):
            if isSHA256(s) { hash = s } else { fail("hash", invalidHash) }
        case .success(nil): break
        case .failure(let message): fail("hash", message.text)
        }

        // provable_files
        var files: [(hash: String, fileName: String)] = []
        switch body["provable_files"] {
        case nil: fail("provable_files", required)
        case .null?: fail("provable_files", notNull)
        case .array(let items)?:
            var itemErrors: [JSONValue] = []
            var anyItemError = false
            for item in items {
                guard case .object = item else {
                    itemErrors.append(.object([("non_field_errors", .array([
                        .string("Invalid data. Expected a dictionary, but got \(item.typeName).")
                    ]))]))
                    anyItemError = true
                    continue
                }
                var fieldErrors: [(String, JSONValue)] = []
                var fileHash: String?
                var fileName: String?
                switch stringField(item["hash"], required: true) {
                case .success(let s?):
                    if isSHA256(s) { fileHash = s } else { fieldErrors.append(("hash", .array([.string(invalidHash)]))) }
                case .success(nil): break
                case .failure(let message): fieldErrors.append(("hash", .array([.string(message.text)])))
                }
                switch stringField(item["file_name"], required: true) {
                case .success(let s?):
                    if s.count > maxNameLength {
                        fieldErrors.append(("file_name", .array([.string("Ensure this field has no more than \(maxNameLength) characters.")])))
                    } else {
                        fileName = s
                    }
                case .success(nil): break
                case .failure(let message): fieldErrors.append(("file_name", .array([.string(message.text)])))
                }
                if let fileHash, let fileName, fieldErrors.isEmpty {
                    files.append((fileHash, fileName))
                    itemErrors.append(.object([]))
                } else {
                    itemErrors.append(.object(fieldErrors))
                    anyItemError = true
                }
            }
            if anyItemError { errors.append(("provable_files", .array(itemErrors))) }
        case let other?:
            fail("provable_files", "Expected a list of items but got type \"\(other.typeName)\".")
        }

        // original_created_at
        var originalCreatedAt = Date(timeIntervalSince1970: 0)
        switch body["original_created_at"] {
        case nil: fail("original_created_at", required)
        case .null?: fail("original_created_at", notNull)
        case .string(let s)?:
            switch QEDDateFormat.parse(s) {
            case .date(let d): originalCreatedAt = d
            case .dateOnly: fail("original_created_at", QEDDateFormat.dateOnlyMessage)
            case .invalid: fail("original_created_at", QEDDateFormat.invalidMessage)
            }
        case _?: fail("original_created_at", QEDDateFormat.invalidMessage)
        }

        // name, note, email: optional, blank allowed
        func optionalText(_ field: String, maxLength: Int?) -> String {
            switch stringField(body[field], required: false, allowBlank: true) {
            case .success(let s?):
                if let maxLength, s.count > maxLength {
                    fail(field, "Ensure this field has no more than \(maxLength) characters.")
                    return ""
                }
                return s
            case .success(nil): return ""
            case .failure(let message): fail(field, message.text); return ""
            }
        }
        let name = optionalText("name", maxLength: maxNameLength)
        let note = optionalText("note", maxLength: nil)
        let email = optionalText("email", maxLength: 254)
        if !email.isEmpty, !isEmail(email), !errors.contains(where: { $0.0 == "email" }) {
            fail("email", invalidEmail)
        }

        // meta_data: any JSON (a JSONField); absent or null is an empty object
        var metaData = body["meta_data"] ?? .object([])
        if metaData == .null { metaData = .object([]) }

        guard errors.isEmpty else { return .failure(.validation(.object(errors))) }
        return .success(Draft(hash: hash, provableFiles: files, originalCreatedAt: originalCreatedAt,
                              name: name, note: note, email: email, metaData: metaData))
    }

    /// DRF `CharField` semantics: numbers are accepted as their text, booleans and
    /// containers are not; `nil` in `.success` means absent and optional.
    private static func stringField(_ value: JSONValue?, required: Bool, allowBlank: Bool = false) -> Result<String?, Message> {
        switch value {
        case nil: return required ? .failure(Message(Self.required)) : .success(nil)
        case .null?: return .failure(Message(notNull))
        case .string(let s)?:
            if !allowBlank, s.trimmingCharacters(in: .whitespaces).isEmpty { return .failure(Message(notBlank)) }
            return .success(s)
        case .int(let i)?: return .success(String(i))
        case .double(let d)?: return .success(String(d))
        case _?: return .failure(Message(notString))
        }
    }

    struct Message: Error {
        let text: String
        init(_ text: String) { self.text = text }
    }

    static func isSHA256(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    private static func isEmail(_ s: String) -> Bool {
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !s.contains(" ")
            && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
    }
}
