import EvidenceConfig
import EvidenceCore
import Foundation

/// What a rule's templates (`name`, `note`, `remote_path`) see for one item: its sighting under
/// that rule (else its first), the file name, the date taken (media `creation_time`, else the
/// file's mtime), and `{dir}` relative to the watched folder (`""` at its top or outside it).
struct ItemTemplate {
    let fileName: String
    let dateTaken: Date
    let values: TemplateValues

    init(item: Item, sources: [SourceSighting], rule: WatchRule) {
        let source = sources.first { $0.rule == rule.name } ?? sources.first
        fileName = source?.name ?? item.sha256.hex
        dateTaken = item.dateTaken ?? source?.mtime ?? item.createdAt
        let root = rule.path.hasSuffix("/") ? rule.path : rule.path + "/"
        let dirPath = source.map { ($0.path as NSString).deletingLastPathComponent + "/" } ?? root
        let dir = dirPath.hasPrefix(root) ? String(dirPath.dropFirst(root.count).dropLast()) : ""
        values = TemplateValues(rule: rule.name, name: fileName, dir: dir, sha256: item.sha256.hex, size: item.size, date: dateTaken)
    }

    func expand(_ template: String) -> String { Template.expand(template, values) }
}
