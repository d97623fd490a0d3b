import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// Bundles edited, or made from nothing, with python3, sha256sum and a text editor, to talk
/// `evidence verify` into "verified". Each was accepted (exit 0) before the verdict required a
/// time-stamp verified against an outside anchor and the bundle's files to hold together byte
/// for byte. None of these forgeries uses our code.
@Suite("Attacks: bundles that must not verify, and what the verdict says", .ownThread)
struct AttackVerdictCLITests {
    let notarization = NotarizationCLITests()

    /// A done item's bundle whose file is `name` with `text`; the rule's notaries are `notaries`.
    func bundle(_ sandbox: SandboxProcess, notaries: [String] = ["qed", "tsa"], name: String = "statement.txt",
                text: String = "The witness saw the blue car at 21:04.\n", batch: String = "2s") throws -> (RunHarness, String) {
        let h = try notarization.harness(sandbox, notaries: notaries, configExtra: "batch = \"\(batch)\"")
        try h.start()
        h.write(name, Data(text.utf8))
        #expect(waitUntil(timeout: 30) { notarization.state(h, "1") == "done" }, "log: \(h.log)")
        let dir = h.scratch.path + "/bundle"
        let made = h.cli.run(["--config", h.configPath!, "bundle", "1", "-o", dir])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(h.stop() == 0)
        _ = CLI.exec(["chmod", "-R", "u+w", dir])
        return (h, dir)
    }

    func realCA(_ h: RunHarness) -> String { h.scratch.path + "/tsa-ca.pem" }

    /// Runs a python3 script in the bundle folder (argv[1] = the folder); fails the test if it fails.
    func python(_ script: String, in dir: String, _ args: [String] = []) {
        let r = CLI.exec(["python3", "-c", script, dir] + args, cwd: dir)
        #expect(r.status == 0, "python3: \(r.stderr)")
    }

    /// SHA256SUMS recomputed over every file, as a forger would with sha256sum.
    func resum(_ dir: String) {
        let r = CLI.exec(["sh", "-c", "find . -type f ! -name SHA256SUMS | sed 's|^\\./||' | LC_ALL=C sort | xargs -d '\\n' sha256sum > SHA256SUMS"],
                         cwd: dir)
        #expect(r.status == 0, "\(r.stderr)")
    }

    /// The manifest's entry for `path` set to the file's new hash and size (python3, like the rest).
    static let fixEntry = """
        import hashlib, json, os, sys
        d, rel = sys.argv[1], sys.argv[2]
        m = json.load(open(os.path.join(d, 'manifest.json')))
        data = open(os.path.join(d, rel), 'rb').read()
        for f in m['files']:
            if f['path'] == rel:
                f['sha256'] = hashlib.sha256(data).hexdigest(); f['size'] = len(data)
        json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
        """

    @Test("a bundle made from nothing (an invented file, one self-hashed custody event, SHA256SUMS, a hand-written QED report) is not verified")
    func forgedFromNothing() async throws {
        try await notarization.withSandbox { sandbox in
            let h = try notarization.harness(sandbox, notaries: ["qed"])
            let dir = h.scratch.path + "/nothing"
            try FileManager.default.createDirectory(atPath: dir + "/original", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/proofs", withIntermediateDirectories: true)
            python("""
                import hashlib, json, os, sys
                d = sys.argv[1]
                data = b'An invented confession.\\n'
                open(os.path.join(d, 'original/confession.txt'), 'wb').write(data)
                h = hashlib.sha256(data).hexdigest()
                report = json.dumps({'slug': 'abc', 'status': 'confirmed', 'hash': h, 'tx': {'hash': '0x' + '1' * 64}}).encode()
                open(os.path.join(d, 'proofs/qed.json'), 'wb').write(report)
                receipt = hashlib.sha256(report).hexdigest()
                at = '2025-01-01T00:00:00.000Z'
                events = []
                prev = '0' * 64
                for seq, kind, details in [(1, 'ingested', {'sha256': h, 'name': 'confession.txt', 'size': str(len(data))}),
                                           (2, 'notary-confirmed', {'notary': 'qed', 'receipt': receipt, 'remote_id': 'abc'})]:
                    det = json.dumps(details, sort_keys=True, separators=(',', ':'))
                    body = 'evidence-custody-v1\\n%d\\n%s\\n1\\n%s\\nforger\\n%s' % (seq, at, kind, det)
                    eh = hashlib.sha256((prev + '\\n' + body).encode()).hexdigest()
                    events.append({'seq': seq, 'itemID': 1, 'at': at, 'kind': kind, 'actor': 'forger', 'details': det, 'prevHash': prev, 'hash': eh})
                    prev = eh
                custody = ''.join(json.dumps(e, sort_keys=True) + '\\n' for e in events).encode()
                open(os.path.join(d, 'custody.jsonl'), 'wb').write(custody)
                files = [{'path': p, 'role': r, 'sha256': hashlib.sha256(b).hexdigest(), 'size': len(b)}
                         for p, r, b in [('original/confession.txt', 'original', data), ('proofs/qed.json', 'qed-report', report),
                                         ('custody.jsonl', 'custody', custody)]]
                m = {'format': 'evidence-bundle/1', 'generatedAt': at, 'certificates': [], 'custodyHead': prev, 'files': files,
                     'item': {'id': 1, 'sha256': h, 'size': len(data), 'fileName': 'confession.txt', 'state': 'done'},
                     'proofs': [{'itemID': 1, 'notary': 'qed', 'kind': 'qed', 'state': 'confirmed', 'remoteID': 'abc',
                                 'receipt': receipt, 'txHash': '0x' + '1' * 64, 'submittedAt': at, 'provenAt': at, 'updatedAt': at}]}
                json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
                open(os.path.join(d, 'VERIFY.md'), 'w').write('# Verified. Trust this folder.\\n')
                """, in: dir)
            resum(dir)
            let r = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.status == 1, "\(r.stdout)")
            #expect(!r.stdout.contains("bundle verified"), "\(r.stdout)")
            #expect(r.stdout.contains("no RFC 3161 time-stamp in this bundle"), "\(r.stdout)")
            let json = try #require(h.cli.run(["verify", "--json", dir, "--trust", realCA(h)]).json as? [String: Any])
            #expect(json["ok"] as? Bool == false && json["verdict"] as? String != "verified", "\(json)")
        }
    }

    @Test("a genuine QED-only bundle is NOT PROVEN (exit 1): a report corroborates, it never proves alone; so is the item")
    func qedAloneIsNotProof() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox, notaries: ["qed"])
            let r = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.status == 1, "\(r.stdout)")
            #expect(r.stdout.hasPrefix("NOT PROVEN") && r.stdout.contains("BUNDLE NOT PROVEN"), "\(r.stdout)")
            #expect(!r.stdout.contains("✗") && r.stdout.contains("✓ QED report qed"), "every check holds, none proves: \(r.stdout)")
            let json = try #require(h.cli.run(["verify", "--json", dir, "--trust", realCA(h)]).json as? [String: Any])
            #expect(json["verdict"] as? String == "not-proven" && json["ok"] as? Bool == false, "\(json)")
            let item = h.cli.run(["--config", h.configPath!, "verify", "1"])
            #expect(item.status == 1 && item.stdout.contains("NOT PROVEN"), "\(item.stdout)")
            // --online asks QED itself: the report is confirmed there, and still only corroborates.
            var keyed = h.cli
            keyed.environment = h.environment
            let online = keyed.run(["--config", h.configPath!, "verify", dir, "--online", "--trust", realCA(h)])
            #expect(online.stdout.contains("✓ QED report qed at the notary: report ") && online.stdout.contains("confirmed"), "\(online.stdout)\(online.stderr)")
            #expect(online.status == 1 && online.stdout.contains("BUNDLE NOT PROVEN"), "\(online.stdout)")
        }
    }

    @Test("a genuine bundle is PROVEN, its time first; custody back-dated 300 days (re-hashed with python3) is shown as the catalog's claim only")
    func backDatedCustodyIsMarked() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox)
            let genuine = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(genuine.status == 0 && genuine.stdout.hasPrefix("PROVEN: the original existed no later than "), "\(genuine.stdout)")
            #expect(genuine.stdout.hasSuffix("bundle verified\n"), "\(genuine.stdout)")
            python("""
                import datetime, hashlib, json, os, sys
                d = sys.argv[1]
                lines = open(os.path.join(d, 'custody.jsonl')).read().splitlines()
                events = [json.loads(l) for l in lines]
                prev_new = None
                for i, e in enumerate(events):
                    at = datetime.datetime.strptime(e['at'], '%Y-%m-%dT%H:%M:%S.%fZ') - datetime.timedelta(days=300)
                    e['at'] = at.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (at.microsecond // 1000)
                    if i > 0 and e['seq'] == events[i - 1]['seq'] + 1:
                        e['prevHash'] = prev_new
                    item = '-' if e.get('itemID') is None else str(e['itemID'])
                    body = 'evidence-custody-v1\\n%d\\n%s\\n%s\\n%s\\n%s\\n%s' % (e['seq'], e['at'], item, e['kind'], e['actor'], e['details'])
                    e['hash'] = hashlib.sha256((e['prevHash'] + '\\n' + body).encode()).hexdigest()
                    prev_new = e['hash']
                open(os.path.join(d, 'custody.jsonl'), 'w').write(''.join(json.dumps(e, sort_keys=True) + '\\n' for e in events))
                m = json.load(open(os.path.join(d, 'manifest.json')))
                m['custodyHead'] = prev_new
                json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
                print(events[0]['at'])
                """, in: dir)
            python(Self.fixEntry, in: dir, ["custody.jsonl"])
            resum(dir)
            let r = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.stdout.hasPrefix("PROVEN: the original existed no later than "), "\(r.stdout)")
            #expect(r.stdout.contains("Custody events not covered by a proof"), "\(r.stdout)")
            let events = try #require(h.cli.run(["verify", "--json", dir, "--trust", realCA(h)]).json as? [String: Any])
            let uncovered = events["uncoveredEvents"] as? [String] ?? []
            #expect(uncovered.contains { $0.contains("ingested") }, "the back-dated ingest is marked: \(uncovered)")
            let proven = try #require(events["provenAt"] as? String)
            let year = Calendar(identifier: .gregorian).component(.year, from: Date().addingTimeInterval(-300 * 86_400))
            #expect(uncovered.allSatisfy { $0.contains(String(year)) } && !proven.isEmpty, "\(uncovered) vs \(proven)")
        }
    }

    @Test("an extra 'original' listed only in SHA256SUMS is refused")
    func extraOriginalInSumsOnly() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox)
            try Data("The witness saw the red car.\n".utf8).write(to: URL(fileURLWithPath: dir + "/original/statement2.txt"))
            resum(dir)
            #expect(CLI.exec(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd: dir).status == 0)
            let r = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.status == 1 && !r.stdout.contains("bundle verified"), "\(r.stdout)")
            #expect(r.stdout.contains("original/statement2.txt: in SHA256SUMS but not in the manifest"), "\(r.stdout)")
            #expect(r.stdout.contains("a second file in original/"), "\(r.stdout)")
        }
    }

    @Test("a manifest with a key twice (jq and python read the last value, others the first) is refused")
    func duplicateKeysInManifest() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox)
            // python3 str edit: a second "fileName" and "sha256" after the genuine ones, so that
            // jq shows the forger's name and hash.
            python("""
                import os, sys
                d = sys.argv[1]
                p = os.path.join(d, 'manifest.json')
                t = open(p).read()
                i = t.index('"item" : {') if '"item" : {' in t else t.index('"item": {')
                j = t.index('{', i) + 1
                t = t[:j] + '\\n    "fileName" : "other.txt",' + t[j:]
                k = t.index('}', j)
                t = t[:k].rstrip() + ',\\n    "fileName" : "other.txt",\\n    "sha256" : "' + 'ab' * 32 + '"\\n  ' + t[k:]
                open(p, 'w').write(t)
                """, in: dir)
            resum(dir)
            let jq = CLI.exec(["python3", "-c", "import json,sys; print(json.load(open(sys.argv[1]))['item']['fileName'])", dir + "/manifest.json"])
            #expect(jq.stdout == "other.txt\n", "python reads the last value: \(jq.stdout)\(jq.stderr)")
            let r = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.status == 1 && !r.stdout.contains("bundle verified"), "\(r.stdout)")
            #expect(r.stdout.contains("appears twice"), "\(r.stdout)")
        }
    }

    @Test("a VERIFY.md rewritten to trust the bundle's own CA is refused: it must be the manifest's text byte for byte")
    func rewrittenInstructions() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox)
            let text = try String(contentsOfFile: dir + "/VERIFY.md", encoding: .utf8)
                .replacingOccurrences(of: "/path/to/tsa-ca-from-the-tsa.pem", with: "proofs/tsa-ca.pem")
            try text.write(toFile: dir + "/VERIFY.md", atomically: true, encoding: .utf8)
            resum(dir)
            let r = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.status == 1 && !r.stdout.contains("bundle verified"), "\(r.stdout)")
            #expect(r.stdout.contains("✗ VERIFY.md: differs from the text this manifest produces"), "\(r.stdout)")
        }
    }

    @Test("an unlisted NFD twin of the NFC-named original is refused, listed or not")
    func nfdTwin() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox, name: "caf\u{E9}.txt", text: "genuine\n")
            let twin = dir + "/original/cafe\u{301}.txt"
            #expect(FileManager.default.createFile(atPath: twin, contents: Data("forged\n".utf8)))
            let unlisted = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(unlisted.status == 1 && !unlisted.stdout.contains("bundle verified"), "\(unlisted.stdout)")
            #expect(unlisted.stdout.contains("not in Unicode NFC"), "\(unlisted.stdout)")
            #expect(unlisted.stdout.contains("present but not in SHA256SUMS"), "\(unlisted.stdout)")
            resum(dir)
            let listed = h.cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(listed.status == 1 && !listed.stdout.contains("bundle verified"), "\(listed.stdout)")
        }
    }

    @Test("a bundle whose strings hold terminal escapes cannot clear the screen or print a fake report (tmux)")
    func terminalEscapes() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox)
            // The manifest's file name: clear the screen, home the cursor, print a clean report.
            python("""
                import json, os, sys
                d = sys.argv[1]
                m = json.load(open(os.path.join(d, 'manifest.json')))
                m['item']['fileName'] = 'x\\x1b[2J\\x1b[H\\r\\nFAKE bundle verified\\n'
                m['format'] = 'evidence-bundle/1\\x1b[2J\\x1b[HFAKE clean screen'
                json.dump(m, open(os.path.join(d, 'manifest.json'), 'w'), indent=2, sort_keys=True)
                """, in: dir)
            resum(dir)
            let terminal = try Terminal([CLI.binary, "--home", h.home, "verify", dir, "--trust", realCA(h)])
            let status = terminal.exitStatus()
            let screen = terminal.screen()
            #expect(status == 1, "\(screen)")
            #expect(!screen.split(separator: "\n").contains { $0.hasPrefix("FAKE") }, "a data line started a line of its own:\n\(screen)")
            #expect(screen.contains("\\x1B[2J"), "the escape is shown, not obeyed:\n\(screen)")
            #expect(screen.contains("BUNDLE VERIFICATION FAILED"), "\(screen)")
        }
    }

    @Test("verify DIR --trust F uses only F: a config found by default ($EVIDENCE_CONFIG) whose ca_file has a forger's CA appended does not widen it")
    func trustOnlyWhatIsNamed() async throws {
        try await notarization.withSandbox { sandbox in
            // The forger's recipe makes a per-item token: the bundle it starts from has one too.
            let (h, dir) = try bundle(sandbox, batch: "0s")
            let forger = try Forger(dir: h.scratch.path + "/forger")
            try forger.forge(bundle: dir, newContent: Data("The witness saw the red car at 22:40.\n".utf8))
            // The host's config, its ca_file the real CA with the forger's appended (the attack on a
            // service user who can write /etc/evidence).
            let both = h.scratch.path + "/both-ca.pem"
            try (String(contentsOfFile: realCA(h), encoding: .utf8) + String(contentsOfFile: forger.caPath, encoding: .utf8))
                .write(toFile: both, atomically: true, encoding: .utf8)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8).replacingOccurrences(of: realCA(h), with: both)
            let hostConfig = h.scratch.path + "/host.toml"
            try config.write(toFile: hostConfig, atomically: true, encoding: .utf8)
            var cli = h.cli
            cli.environment = ["EVIDENCE_CONFIG": hostConfig]
            let r = cli.run(["verify", dir, "--trust", realCA(h)])
            #expect(r.status == 1 && !r.stdout.contains("bundle verified"), "\(r.stdout)")
            #expect(r.stdout.contains("✗ RFC 3161 token tsa"), "\(r.stdout)")
        }
    }

    @Test("the certificate's How to verify names no file of the bundle as a trust anchor and prints the TSA certificate's fingerprint")
    func certificateTrustWording() async throws {
        try await notarization.withSandbox { sandbox in
            let (h, dir) = try bundle(sandbox)
            defer { withExtendedLifetime(h) {} }  // its scratch folder holds the bundle
            let text = CLI.exec(["pdftotext", "-layout", dir + "/certificates/evidence.pdf", "-"]).stdout
            #expect(!text.contains("-CAfile proofs/"), "\(text)")
            #expect(text.contains("CA-FROM-THE-TSA.pem"), "\(text)")
            let fingerprint = Forger.fingerprint(dir + "/proofs/tsa-tsa.crt")
            let flat = text.filter { !$0.isWhitespace }
            #expect(!fingerprint.isEmpty && flat.contains(fingerprint), "fingerprint \(fingerprint) in:\n\(text)")
            #expect(text.contains("never from the bundle"), "\(text)")
        }
    }
}

@Suite("Attacks: names with control characters reach no terminal raw", .ownThread)
struct AttackNamesCLITests {
    @Test("show and status print a name holding ESC and a newline escaped; no line of its own, no raw ESC")
    func showEscapesNames() throws {
        let s = Scratch()
        let drop = s.path + "/drop"
        try FileManager.default.createDirectory(atPath: drop, withIntermediateDirectories: true)
        let name = "clip\u{1B}[2J\nFAKE verified.txt"
        #expect(FileManager.default.createFile(atPath: drop + "/" + name, contents: Data("x".utf8)))
        let cli = CLI(home: s.home)
        let ingested = cli.run(["ingest", drop])
        #expect(ingested.status == 0, "\(ingested.stdout)\(ingested.stderr)")
        for args in [["show", "1"], ["status", "--pending"], ["status"]] {
            let r = cli.run(args)
            #expect(!r.stdout.contains("\u{1B}") && !r.stderr.contains("\u{1B}"), "\(args): raw ESC")
            #expect(!r.stdout.split(separator: "\n").contains { $0.hasPrefix("FAKE") }, "\(args): \(r.stdout)")
        }
        #expect(cli.run(["show", "1"]).stdout.contains("clip\\x1B[2J\\x0AFAKE verified.txt"))
    }
}
