import ArgumentParser
import EvidenceCore
import EvidenceStore
import Foundation

struct HashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash",
        abstract: "Print SHA-256 digests, in the format `sha256sum -c` checks.",
        discussion: Help.reflow("""
        Streams each file through SHA-256 with three fixed 256 KiB buffers (constant memory at any
        size). Use `-` for standard input. Names containing a backslash or newline are escaped
        as sha256sum does.

          evidence hash clip.mp4 > clip.sha256 && sha256sum -c clip.sha256

        Exit codes: 0 all hashed · 1 some file could not be read · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Files to hash (`-` for stdin).", valueName: "file"))
    var files: [String]

    struct Entry: Encodable {
        var path: String
        var sha256: String?
        var size: Int64?
        var error: String?
    }

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one FILE (or - for standard input)") }
    }

    func run() throws {
        var entries: [Entry] = []
        var failed = false
        for path in files {
            do {
                let r = path == "-" ? try FileHasher.hash(fd: 0, path: "-") : try FileHasher.hash(path: path)
                entries.append(Entry(path: path, sha256: r.digest.hex, size: r.size))
                if !global.json { Output.line(Self.sumLine(r.digest.hex, path)) }
            } catch {
                failed = true
                entries.append(Entry(path: path, error: error.description))
                Output.err(error.description)
            }
        }
        if global.json { Output.json(entries) }
        if failed { throw ExitCode(1) }
    }

    /// `<hex>  <name>`, with sha256sum's escaping for names holding `\` or a newline.
    static func sumLine(_ hex: String, _ name: String) -> String {
        guard name.contains("\\") || name.contains("\n") else { return "\(hex)  \(name)" }
        let escaped = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
        return "\\\(hex)  \(escaped)"
    }
}
