import ArgumentParser
import EvidenceCore
import EvidencePipeline
import Foundation

/// Who took evidence away from the command line: an `accessed` custody event by `cli:USER`
/// (the local user name), as the portal records its views and downloads.
enum AccessRecord {
    static func record(_ itemID: Int64, _ what: String, in home: EvidenceHome) throws {
        do {
            try home.catalog.appendEvent(itemID: itemID, kind: .accessed, actor: "cli:\(ProcessInfo.processInfo.userName)",
                                         details: ["what": what, "via": "cli"])
            try home.catalog.flushHead()
        } catch {
            Output.err("item #\(itemID): the access could not be recorded in the custody log, so nothing is handed out: \(error)")
            throw ExitCode(1)
        }
    }
}
