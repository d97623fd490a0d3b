import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// A defendant's expert with `openssl`, `sha256sum` and a text editor: their own CA and TSA
/// certificate (timeStamping EKU), a fresh time-stamp over changed content, and every hash in the
/// bundle recomputed. Nothing here uses our code to build the forgery.
struct Forger {
    let dir: String

    init(dir: String) throws {
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Self.pki.write(toFile: dir + "/pki.cnf", atomically: true, encoding: .utf8)
        try Self.tsa.write(toFile: dir + "/tsa.cnf", atomically: true, encoding: .utf8)
        try "01\n".write(toFile: dir + "/serial", atomically: true, encoding: .utf8)
        try openssl(["req", "-config", "pki.cnf", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650", "-sha256",
                     "-subj", "/O=Evidence Sandbox/CN=Evidence Test Root CA", "-extensions", "v3_ca"])
        try openssl(["req", "-config", "pki.cnf", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", "tsa.key", "-out", "tsa.csr", "-sha256", "-subj", "/O=Evidence Sandbox/CN=Evidence Test TSA"])
        try openssl(["x509", "-req", "-in", "tsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", "0x4242",
                     "-days", "3650", "-sha256", "-extfile", "pki.cnf", "-extensions", "v3_tsa", "-out", "tsa.crt"])
    }

    var caPath: String { dir + "/ca.crt" }
    var tsaCertPath: String { dir + "/tsa.crt" }

    /// `openssl ts -query` then `-reply` over `file`; returns the token's serial as hex.
    @discardableResult
    func timestamp(_ file: String, to token: String) throws -> String {
        try openssl(["ts", "-query", "-data", file, "-sha256", "-cert", "-out", "q.tsq"])
        try openssl(["ts", "-reply", "-config", "tsa.cnf", "-queryfile", "q.tsq", "-out", token])
        let text = try openssl(["ts", "-reply", "-in", token, "-text"])
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("Serial number: 0x") })
        return line.dropFirst("Serial number: 0x".count).lowercased()
    }

    @discardableResult
    func openssl(_ args: [String]) throws -> String {
        let r = CLI.exec(["openssl"] + args, cwd: dir)
        guard r.status == 0 else { throw ForgeryError.failed("openssl \(args.joined(separator: " ")): \(r.stderr)") }
        return r.stdout
    }

    /// Rewrites a genuine bundle around `newContent`, the way a forger would with standard tools.
    func forge(bundle: String, newContent: Data) throws {
        _ = CLI.exec(["chmod", "-R", "u+w", bundle])
        let manifestPath = bundle + "/manifest.json"
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifestPath))) as? [String: Any])
        var item = try #require(manifest["item"] as? [String: Any])
        let oldHash = try #require(item["sha256"] as? String)
        let name = try #require(item["fileName"] as? String)

        // 1. The changed original, and its hash.
        try newContent.write(to: URL(fileURLWithPath: bundle + "/original/" + name))
        let newHash = sha256(bundle + "/original/" + name)

        // 2. A new time-stamp from the forger's TSA; the forger's CA and TSA certificate in proofs/.
        //    VERIFY.md names the certificates by fingerprint: note the old ones for step 6.
        let oldFingerprints = [Self.fingerprint(bundle + "/proofs/tsa-tsa.crt"), Self.fingerprint(bundle + "/proofs/tsa-ca.pem")]
        let oldSubjects = [Self.subject(bundle + "/proofs/tsa-tsa.crt"), Self.subject(bundle + "/proofs/tsa-ca.pem")]
        let oldSerial = (manifest["proofs"] as? [[String: Any]])?.first { $0["kind"] as? String == "rfc3161" }?["remoteID"] as? String
        let oldSize = item["size"] as? Int ?? -1
        let serial = try timestamp(bundle + "/original/" + name, to: bundle + "/proofs/tsa.tsr")
        try FileManager.default.removeItem(atPath: bundle + "/proofs/tsa-ca.pem")
        try FileManager.default.copyItem(atPath: caPath, toPath: bundle + "/proofs/tsa-ca.pem")
        try? FileManager.default.removeItem(atPath: bundle + "/proofs/tsa-tsa.crt")
        try FileManager.default.copyItem(atPath: tsaCertPath, toPath: bundle + "/proofs/tsa-tsa.crt")

        // 3. The QED report's hash.
        let qedPath = bundle + "/proofs/qed.json"
        let qed = try String(contentsOfFile: qedPath, encoding: .utf8).replacingOccurrences(of: oldHash, with: newHash)
        try qed.write(toFile: qedPath, atomically: true, encoding: .utf8)

        // 4. The receipts' hashes, then the custody events, re-hashed one by one with openssl.
        var proofs = try #require(manifest["proofs"] as? [[String: Any]])
        var replacements = [oldHash: newHash]
        for i in proofs.indices {
            let file = bundle + "/proofs/" + (proofs[i]["notary"] as! String) + (proofs[i]["kind"] as? String == "rfc3161" ? ".tsr" : ".json")
            let receipt = sha256(file)
            if let old = proofs[i]["receipt"] as? String { replacements[old] = receipt }
            proofs[i]["receipt"] = receipt
            if proofs[i]["kind"] as? String == "rfc3161" {
                if let old = proofs[i]["remoteID"] as? String { replacements["\"remote_id\\\":\\\"\(old)\\\""] = "\"remote_id\\\":\\\"\(serial)\\\"" }
                proofs[i]["remoteID"] = serial
            }
        }
        manifest["proofs"] = proofs
        var lines = try String(contentsOfFile: bundle + "/custody.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)
        var head = ""
        for i in lines.indices {
            for (old, new) in replacements { lines[i] = lines[i].replacingOccurrences(of: old, with: new) }
            var event = try #require(try JSONSerialization.jsonObject(with: Data(lines[i].utf8)) as? [String: Any])
            let body = "evidence-custody-v1\n\(event["seq"]!)\n\(event["at"]!)\n\(event["itemID"].map { "\($0)" } ?? "-")\n"
                + "\(event["kind"]!)\n\(event["actor"]!)\n\(event["details"]!)"
            let input = dir + "/event.txt"
            try Data(((event["prevHash"] as! String) + "\n" + body).utf8).write(to: URL(fileURLWithPath: input))
            let hash = sha256(input)
            replacements[event["hash"] as! String] = hash
            event["hash"] = hash
            head = hash
            lines[i] = String(decoding: try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]), as: UTF8.self)
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: bundle + "/custody.jsonl", atomically: true, encoding: .utf8)

        // 5. The manifest: item hash, the files' hashes and sizes, the head.
        item["sha256"] = newHash
        item["size"] = newContent.count
        manifest["item"] = item
        manifest["custodyHead"] = head
        var files = try #require(manifest["files"] as? [[String: Any]])
        var kept: [[String: Any]] = []
        for var f in files {
            let path = bundle + "/" + (f["path"] as! String)
            guard FileManager.default.fileExists(atPath: path) else { continue }
            f["sha256"] = sha256(path)
            f["size"] = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            kept.append(f)
        }
        if !kept.contains(where: { $0["path"] as? String == "proofs/tsa-tsa.crt" }) {
            kept.append(["path": "proofs/tsa-tsa.crt", "role": "rfc3161-signer", "sha256": sha256(bundle + "/proofs/tsa-tsa.crt"),
                         "size": (try FileManager.default.attributesOfItem(atPath: bundle + "/proofs/tsa-tsa.crt")[.size] as? Int) ?? 0])
        }
        files = kept
        manifest["files"] = files
        try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: manifestPath))

        // 6. VERIFY.md, edited with the new hash, size, serial and fingerprints (sed would do).
        var verify = try String(contentsOfFile: bundle + "/VERIFY.md", encoding: .utf8)
        let newFingerprints = [Self.fingerprint(tsaCertPath), Self.fingerprint(caPath)]
        let newSubjects = [Self.subject(tsaCertPath), Self.subject(caPath)]
        for (old, new) in zip(oldFingerprints + oldSubjects, newFingerprints + newSubjects) where !old.isEmpty {
            verify = verify.replacingOccurrences(of: old, with: new)
        }
        verify = verify.replacingOccurrences(of: oldHash, with: newHash)
            .replacingOccurrences(of: "— \(oldSize) bytes", with: "— \(newContent.count) bytes")
        if let oldSerial { verify = verify.replacingOccurrences(of: "serial \(oldSerial)", with: "serial \(serial)") }
        try verify.write(toFile: bundle + "/VERIFY.md", atomically: true, encoding: .utf8)

        // 7. SHA256SUMS over everything, with sha256sum.
        let sums = CLI.exec(["sh", "-c", "find . -type f ! -name SHA256SUMS | sed 's|^\\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS"],
                            cwd: bundle)
        guard sums.status == 0 else { throw ForgeryError.failed("sha256sum: \(sums.stderr)") }
    }

    /// A certificate's SHA-256 fingerprint as `openssl x509 -fingerprint` prints it ("AB:CD:…").
    static func fingerprint(_ pem: String) -> String {
        let out = CLI.exec(["openssl", "x509", "-in", pem, "-noout", "-fingerprint", "-sha256"]).stdout
        return out.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    /// A certificate's subject in RFC 2253 form, as VERIFY.md prints it.
    static func subject(_ pem: String) -> String {
        let out = CLI.exec(["openssl", "x509", "-in", pem, "-noout", "-subject", "-nameopt", "RFC2253"]).stdout
        return out.hasPrefix("subject=") ? String(out.dropFirst("subject=".count)).trimmingCharacters(in: .whitespacesAndNewlines) : ""
    }

    func sha256(_ file: String) -> String {
        String(CLI.exec(["sha256sum", file]).stdout.prefix(64))
    }

    enum ForgeryError: Error { case failed(String) }

    static let pki = """
        [ req ]
        distinguished_name = dn
        prompt = no
        [ dn ]
        CN = unused
        [ v3_ca ]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        [ v3_tsa ]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature, nonRepudiation
        extendedKeyUsage = critical, timeStamping
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid, issuer

        """

    static let tsa = """
        [ tsa ]
        default_tsa = forged
        [ forged ]
        serial = serial
        signer_cert = tsa.crt
        signer_key = tsa.key
        signer_digest = sha256
        certs = ca.crt
        default_policy = 1.2.3.4.1
        digests = sha256
        ess_cert_id_alg = sha256

        """
}

@Suite("Attacks: forged bundles and foreign TSAs, built with openssl alone", .ownThread)
struct AttackCLITests {
    let notarization = NotarizationCLITests()

    /// A done item (QED + the sandbox TSA) and its bundle; returns the bundle folder.
    func genuineBundle(_ h: RunHarness) throws -> String {
        try h.start()
        h.write("statement.txt", Data("The witness saw the blue car at 21:04.\n".utf8))
        #expect(waitUntil(timeout: 30) { notarization.state(h, "1") == "done" }, "log: \(h.log)")
        let bundle = h.scratch.path + "/bundle"
        let made = h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", bundle])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(h.stop() == 0)
        return bundle
    }

    @Test("a bundle forged with openssl (changed original, own CA and TSA, new time-stamp, every hash and custody event recomputed) is not verified, with or without the real TSA's CA")
    func forgedBundleRefused() async throws {
        try await notarization.withSandbox { sandbox in
            // The recipe forges a per-item token (.tsr); the batched form's forgery is refused in EvidenceRecordTests.
            let h = try notarization.harness(sandbox, configExtra: "batch = \"0s\"")
            let bundle = try genuineBundle(h)
            let forger = try Forger(dir: h.scratch.path + "/forger")
            try forger.forge(bundle: bundle, newContent: Data("The witness saw the red car at 22:40.\n".utf8))

            // The forgery is consistent to every naive check: the sums, and openssl with the bundle's own CA.
            #expect(CLI.exec(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd: bundle).status == 0)
            let naive = CLI.exec(["openssl", "ts", "-verify", "-data", "original/statement.txt", "-in", "proofs/tsa.tsr",
                                  "-CAfile", "proofs/tsa-ca.pem"], cwd: bundle)
            #expect(naive.stdout.contains("Verification: OK"), "\(naive.stdout)\(naive.stderr)")

            let bare = h.cli.run(["verify", bundle])
            #expect(bare.status == 1, "\(bare.stdout)")
            // With no anchor nothing contradicts the forgery, and nothing proves it either.
            #expect(!bare.stdout.contains("bundle verified") && bare.stdout.contains("BUNDLE NOT PROVEN"), "\(bare.stdout)")
            #expect(bare.stdout.contains("? RFC 3161 token tsa: not verified"), "\(bare.stdout)")
            #expect(bare.stdout.contains("--trust FILE"), "\(bare.stdout)")

            let realCA = h.scratch.path + "/tsa-ca.pem"
            for args in [["--config", h.configPath!, "verify", bundle], ["verify", bundle, "--trust", realCA]] {
                let r = h.cli.run(args)
                #expect(r.status == 1, "\(args): \(r.stdout)")
                #expect(!r.stdout.contains("bundle verified"), "\(args): \(r.stdout)")
                #expect(r.stdout.contains("✗ RFC 3161 token tsa") && r.stdout.contains("signature or chain verification failed"), "\(args): \(r.stdout)")
            }
            // Only the anchor stops it: trusting the forger's own CA, every other check passes.
            let trustingForger = h.cli.run(["verify", bundle, "--trust", forger.caPath])
            #expect(trustingForger.status == 0 && trustingForger.stdout.contains("bundle verified"), "\(trustingForger.stdout)")
            // The bundled (forged) CA is shown for comparison, by the fingerprint openssl prints for it.
            let printed = CLI.exec(["openssl", "x509", "-in", forger.caPath, "-noout", "-fingerprint", "-sha256"]).stdout
            let fingerprint = String(try #require(printed.split(separator: "=").last)).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(bare.stdout.contains("NOT used as a trust anchor") && bare.stdout.contains(fingerprint), "\(bare.stdout)")
        }
    }

    @Test("the recipe without rewriting the custody log: the custody events disagree with the manifest")
    func forgedManifestWithoutCustody() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox, configExtra: "batch = \"0s\"")
            let bundle = try genuineBundle(h)
            let original = try Data(contentsOf: URL(fileURLWithPath: bundle + "/custody.jsonl"))
            let forger = try Forger(dir: h.scratch.path + "/forger")
            try forger.forge(bundle: bundle, newContent: Data("Another statement.\n".utf8))
            // Put the genuine custody log back, and fix up the sums and the manifest's entry for it.
            try original.write(to: URL(fileURLWithPath: bundle + "/custody.jsonl"))
            let manifestPath = bundle + "/manifest.json"
            var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifestPath))) as? [String: Any])
            let lines = String(decoding: original, as: UTF8.self).split(separator: "\n")
            let lastEvent = try #require(try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as? [String: Any])
            manifest["custodyHead"] = lastEvent["hash"]
            manifest["files"] = (manifest["files"] as? [[String: Any]] ?? []).map { f -> [String: Any] in
                var f = f
                if f["path"] as? String == "custody.jsonl" { f["sha256"] = forger.sha256(bundle + "/custody.jsonl"); f["size"] = original.count }
                return f
            }
            try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: manifestPath))
            _ = CLI.exec(["sh", "-c", "find . -type f ! -name SHA256SUMS | sed 's|^\\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS"], cwd: bundle)

            let r = h.cli.run(["verify", bundle, "--trust", forger.caPath])  // even trusting the forger's own CA
            #expect(r.status == 1, "\(r.stdout)")
            #expect(r.stdout.contains("✗ custody agrees with the manifest"), "\(r.stdout)")
            #expect(r.stdout.contains("no ingested event with the item's SHA-256"), "\(r.stdout)")
        }
    }

    @Test("a genuine bundle verifies with --trust (the TSA's CA from the TSA), and is not verified with no anchor at all")
    func genuineBundleNeedsAnAnchor() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            let bundle = try genuineBundle(h)
            let ok = h.cli.run(["verify", bundle, "--trust", h.scratch.path + "/tsa-ca.pem"])
            #expect(ok.status == 0 && ok.stdout.contains("bundle verified"), "\(ok.stdout)")
            #expect(ok.stdout.contains("✓ RFC 4998 evidence record tsa") && ok.stdout.contains("signature and chain verified"), "\(ok.stdout)")
            let none = h.cli.run(["verify", bundle])
            #expect(none.status == 1, "\(none.stdout)")
            #expect(!none.stdout.contains("bundle verified"), "\(none.stdout)")
            #expect(none.stdout.contains("not verified") && none.stdout.contains("--trust FILE"), "\(none.stdout)")
            let json = h.cli.run(["verify", "--json", bundle])
            #expect((json.json as? [String: Any])?["ok"] as? Bool == false, "\(json.stdout)")
        }
    }

    @Test("a proof the manifest lists but the bundle does not prove (not confirmed) fails verification")
    func unconfirmedProofFails() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox)
            let bundle = try genuineBundle(h)
            _ = CLI.exec(["chmod", "-R", "u+w", bundle])
            let manifestPath = bundle + "/manifest.json"
            let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
            // The TSA proof marked pending by hand, its files dropped, sums recomputed.
            var manifest = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            manifest["proofs"] = (manifest["proofs"] as? [[String: Any]] ?? []).map { p -> [String: Any] in
                var p = p
                if p["notary"] as? String == "tsa" { p["state"] = "pending" }
                return p
            }
            try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: manifestPath))
            _ = CLI.exec(["sh", "-c", "find . -type f ! -name SHA256SUMS | sed 's|^\\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS"], cwd: bundle)
            let r = h.cli.run(["verify", bundle, "--trust", h.scratch.path + "/tsa-ca.pem"])
            #expect(r.status == 1, "\(r.stdout)")
            #expect(r.stdout.contains("✗ RFC 4998 evidence record tsa: pending, not confirmed"), "\(r.stdout)")
        }
    }

    @Test("a TSA notary without ca_file: evidence run refuses to start (exit 2, file and field named), so no token is stored on its imprint alone")
    func tsaWithoutCARefused() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox, notaries: ["tsa"])
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
                .split(separator: "\n").filter { !$0.hasPrefix("ca_file") }.joined(separator: "\n")
            try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            let r = CLI.exec([CLI.binary, "--config", h.configPath!, "--home", h.home, "run", "--rules", h.rules], timeout: 10,
                             environment: h.environment)
            #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(h.configPath!) && r.stderr.contains("notaries.tsa.ca_file"), "\(r.stderr)")
        }
    }

    @Test("a TSA whose tokens are signed under another CA than the configured ca_file: refused, the proof never confirmed")
    func foreignTSARefused() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox, notaries: ["tsa"])
            // The operator's ca_file is a CA the sandbox TSA does not chain to (made with openssl).
            let other = try Forger(dir: h.scratch.path + "/other-ca")
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8)
                .replacingOccurrences(of: h.scratch.path + "/tsa-ca.pem", with: other.caPath)
            try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            try h.start()
            h.write("clip.bin", randomBytes(5_000))
            #expect(waitUntil(timeout: 30) { h.log.contains("signature or chain verification failed") }, "log: \(h.log)")
            let proofs = notarization.show(h, "1")["proofs"] as? [[String: Any]] ?? []
            #expect(!proofs.contains { $0["state"] as? String == "confirmed" }, "\(proofs)")
            #expect(!["confirmed", "certified", "done"].contains(notarization.state(h, "1") ?? ""))
            #expect(h.stop() == 0)
        }
    }
}
