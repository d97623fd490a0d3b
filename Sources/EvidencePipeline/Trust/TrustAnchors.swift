import EvidenceConfig
import Foundation

/// The trust anchors of a set-up, and the real check of who can write them (`AnchorWriteCheck`).
public enum TrustAnchors {
    /// The config file, each rfc3161 notary's `ca_file`, the rules folder and every rule file in it.
    /// `rulesDirectory`: the folder `run` loads rules from (relative to the current directory).
    public static func anchors(config: EvidenceConfig, rulesDirectory: String?) -> [AnchorWriteCheck.Anchor] {
        var out: [AnchorWriteCheck.Anchor] = []
        if let file = config.file { out.append(anchor(file, "config file")) }
        for (name, notary) in config.notaries.sorted(by: { $0.key < $1.key }) where notary.kind == .rfc3161 {
            if let ca = notary.caFile { out.append(anchor(ca, "notaries.\(name).ca_file")) }
        }
        if let dir = rulesDirectory {
            let absolute = ((dir.hasPrefix("/") ? dir : FileManager.default.currentDirectoryPath + "/" + dir) as NSString).standardizingPath
            out.append(anchor(absolute, "rules folder"))
            // The files `ConfigLoader.loadRules` reads: *.toml, not hidden.
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: absolute)) ?? [])
                .filter { $0.hasSuffix(".toml") && !$0.hasPrefix(".") }.sorted()
            out += names.map { anchor(absolute + "/" + $0, "rule file") }
        }
        return out
    }

    /// The process's effective uid and all its groups.
    public static var currentIdentity: AnchorWriteCheck.Identity {
        var groups = Set<UInt32>([getegid()])
        let n = getgroups(0, nil)
        if n > 0 {
            var list = [gid_t](repeating: 0, count: Int(n))
            let got = getgroups(n, &list)
            if got > 0 { groups.formUnion(list.prefix(Int(got))) }
        }
        return AnchorWriteCheck.Identity(uid: geteuid(), groups: groups)
    }

    /// `AnchorWriteCheck` over the real files, as the current process.
    public static func check(config: EvidenceConfig, rulesDirectory: String?) -> AnchorWriteCheck.Outcome {
        AnchorWriteCheck.check(anchors(config: config, rulesDirectory: rulesDirectory), as: currentIdentity, stat: ownership)
    }

    /// `stat` (following links), or nil when the path does not exist or cannot be reached.
    public static func ownership(_ path: String) -> AnchorWriteCheck.Ownership? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return AnchorWriteCheck.Ownership(uid: st.st_uid, gid: st.st_gid, mode: UInt32(st.st_mode),
                                          isDirectory: st.st_mode & S_IFMT == S_IFDIR)
    }

    /// One line per finding, naming the path, what it anchors, owner, mode and how it is writable.
    public static func describe(_ f: AnchorWriteCheck.Finding) -> String {
        "\(f.path) (\(f.anchor); owner \(userName(f.ownership.uid)):\(groupName(f.ownership.gid)), mode "
            + String(format: "%04o", f.ownership.mode) + "): \(f.why)"
    }

    static func anchor(_ path: String, _ what: String) -> AnchorWriteCheck.Anchor {
        let resolved = path.withCString { p -> String? in
            guard let r = realpath(p, nil) else { return nil }
            defer { free(r) }
            return String(cString: r)
        }
        return AnchorWriteCheck.Anchor(path: path, resolved: resolved, what: what)
    }

    public static func userName(_ uid: UInt32) -> String {
        var pwd = passwd(), result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 1024)
        guard getpwuid_r(uid, &pwd, &buffer, buffer.count, &result) == 0, result != nil, let name = pwd.pw_name else { return "\(uid)" }
        return String(cString: name)
    }

    static func groupName(_ gid: UInt32) -> String {
        var grp = group(), result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getgrgid_r(gid, &grp, &buffer, buffer.count, &result) == 0, result != nil, let name = grp.gr_name else { return "\(gid)" }
        return String(cString: name)
    }
}
