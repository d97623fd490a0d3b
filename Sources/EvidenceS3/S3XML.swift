import EvidenceStore
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An S3 XML answer (ListObjectsV2, errors, multipart initiate and complete, legal hold,
/// versioning, Object Lock) as a tree of elements, read by FoundationXML's `XMLParser`.
///
/// Names are local names (`<s3:Key>` is `Key`); an element's text is its character data and
/// CDATA, entities decoded by the parser, leading and trailing blanks kept. Refused before the
/// parser sees them, as no S3 server sends them: a document type declaration (it is where
/// entities are declared: nothing is ever expanded or fetched), text that is not UTF-8 and an
/// empty processing instruction (both crash Foundation's parser on Linux, see
/// `OwnCloudAPI.xmlParser`), and elements nested deeper than `maxDepth`.
struct S3XML: Sendable {
    struct Element: Sendable {
        var name: String
        var text = ""
        var children: [Element] = []
    }

    /// Why an answer could not be read; `description` says what was wrong in one line.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static let maxDepth = 32

    let root: Element

    init(_ root: Element) { self.root = root }

    init(parsing data: Data) throws(Malformed) {
        if data.isEmpty { throw Malformed(description: "the answer is empty, not XML") }
        guard String(validating: data, as: UTF8.self) != nil else { throw Malformed(description: "the answer is not UTF-8 text") }
        if data.range(of: Data("<!DOCTYPE".utf8)) != nil {
            throw Malformed(description: "the answer has a document type declaration (refused: entities are never expanded)")
        }
        if Self.hasEmptyProcessingInstruction(data) {
            throw Malformed(description: "the answer has an empty processing instruction")
        }
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let ok = parser.parse()
        if let problem = builder.problem { throw Malformed(description: problem) }
        guard ok, let root = builder.root else {
            let reason = parser.parserError.map { " (XMLParser error \(($0 as NSError).code))" } ?? ""
            throw Malformed(description: "the answer is not well-formed XML at line \(parser.lineNumber), column \(parser.columnNumber)\(reason)")
        }
        self.root = root
    }

    /// The text of every element named `name`, the root included, in document order.
    func all(_ name: String) -> [String] { elements(name).map(\.text) }

    /// The text of the first element named `name`, or nil when there is none.
    func first(_ name: String) -> String? { all(name).first }

    /// Every element named `parent`, each as a document of its own.
    func blocks(_ parent: String) -> [S3XML] { elements(parent).map(S3XML.init) }

    /// The text of the first element named `name`; `Malformed` naming it when there is none.
    func required(_ name: String) throws(Malformed) -> String {
        guard let text = first(name) else { throw Malformed(description: "the answer <\(root.name)> has no <\(name)>") }
        return text
    }

    private func elements(_ name: String) -> [Element] {
        var out: [Element] = []
        func walk(_ e: Element) {
            if e.name == name { out.append(e) }
            e.children.forEach(walk)
        }
        walk(root)
        return out
    }

    /// For XML we send: `&`, `<` and `>` as entities.
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// `<?target?>` (blanks allowed before `?>`) anywhere in `data`.
    static func hasEmptyProcessingInstruction(_ data: Data) -> Bool {
        let b = [UInt8](data)
        func isBlank(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d }
        var i = 0
        while i + 1 < b.count {
            defer { i += 1 }
            guard b[i] == UInt8(ascii: "<"), b[i + 1] == UInt8(ascii: "?") else { continue }
            var j = i + 2
            while j < b.count, !isBlank(b[j]), b[j] != UInt8(ascii: "?") { j += 1 }
            while j < b.count, isBlank(b[j]) { j += 1 }
            if j + 1 < b.count, b[j] == UInt8(ascii: "?"), b[j + 1] == UInt8(ascii: ">") { return true }
        }
        return false
    }
}

/// SAX events to an `S3XML.Element` tree; used by one parse on one thread.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    var root: S3XML.Element?
    var problem: String?
    private var stack: [S3XML.Element] = []

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        guard stack.count < S3XML.maxDepth else {
            problem = "the answer nests elements deeper than \(S3XML.maxDepth)"
            parser.abortParsing()
            return
        }
        stack.append(S3XML.Element(name: name))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if !stack.isEmpty { stack[stack.count - 1].text += string }
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        if !stack.isEmpty { stack[stack.count - 1].text += String(decoding: block, as: UTF8.self) }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard let done = stack.popLast() else { return }
        if stack.isEmpty { root = done } else { stack[stack.count - 1].children.append(done) }
    }

    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        problem = "the answer declares an entity (\(name)); refused"
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?) {
        problem = "the answer declares an external entity (\(name)); refused"
        parser.abortParsing()
    }
}
