import ArgumentParser
import EvidenceArchive
import EvidenceConfig
import EvidencePipeline
import EvidenceStore
import Foundation

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Set up a new evidence folder: a commented evidence.toml, one example rule, the home.",
        discussion: Help.reflow("""
        Writes DIR/evidence.toml (every setting explained, notaries and cloud accounts as
        commented examples, a local archive folder enabled), DIR/watch-rules/drop.toml (watches
        DIR/drop, archives to DIR/archive), creates those folders and the home (store +
        catalog), then checks what it wrote by loading it. Nothing is overwritten: if either file
        exists, nothing is written at all.

          evidence init /srv/evidence
          evidence init            # here

        Exit codes: 0 created · 1 a file exists or cannot be written · 2 usage error.
        """)
    )

    @Argument(help: ArgumentHelp("Folder to set up (created if missing; default: here).", valueName: "dir"))
    var dir: String = "."

    @Flag(name: .long, help: "Print machine-readable JSON on stdout.")
    var json = false

    struct Created: Encodable { var config: String; var rule: String; var home: String; var drop: String; var archive: String; var next: [String] }

    func run() throws {
        let base = ((dir.hasPrefix("/") ? dir : FileManager.default.currentDirectoryPath + "/" + dir) as NSString).standardizingPath
        let config = base + "/evidence.toml", rules = base + "/watch-rules", rule = rules + "/drop.toml"
        let home = base + "/home", drop = base + "/drop", archive = base + "/archive"
        for f in [config, rule] where FileManager.default.fileExists(atPath: f) {
            Output.err("\(f) exists: refusing to overwrite anything (nothing was written)")
            throw ExitCode(1)
        }
        do {
            for d in [base, rules, drop, archive] {
                try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            }
            try AtomicFile.write(Data(Self.configText.utf8), to: config, mode: 0o644)
            try AtomicFile.write(Data(Self.ruleText(drop: drop).utf8), to: rule, mode: 0o644)
            _ = try EvidenceHome(path: home, mustExist: false)
        } catch {
            Output.err("cannot set up \(base): \(error)")
            throw ExitCode(1)
        }
        // What was written must load: the same checks `rules check` makes.
        let loaded: EvidenceConfig
        do { loaded = try ConfigLoader.load(path: config) } catch {
            Output.err("internal error: the written config does not load: \(error)")
            throw ExitCode(1)
        }
        _ = try RuleSet.load(explicit: rules, config: loaded, home: home)
        let quoted = config.contains(" ") ? "\"\(config)\"" : config
        let next = ["evidence --config \(quoted) rules check", "evidence --config \(quoted) run",
                    "evidence --config \(quoted) status"]
        if json {
            Output.json(Created(config: config, rule: rule, home: home, drop: drop, archive: archive, next: next))
            return
        }
        Output.line("created \(config)\n        \(rule)\n        \(home) (store + catalog)\n        \(drop) (watched) and \(archive) (archive)")
        Output.line("\nnext:")
        for (i, c) in next.enumerated() { Output.line("  \(i + 1). \(c)") }
        Output.line("\nthen drop a file into \(drop); edit evidence.toml to add notaries and cloud accounts.")
        Output.line("as a service: \(config), the CA files and \(rules) must be root's and read-only to the user evidence runs as "
            + "(chown -R root:root \(rules) \(config)), or `evidence run` refuses to start (see anchor_permissions in evidence.toml).")
    }

    static let configText = """
        # evidence.toml — written by `evidence init`. Relative paths are relative to this file.
        # Durations: "500ms", "2s", "10m", "30d". Secrets only via *_env (a variable's name) or
        # *_file (a file of mode 0600); never the secret itself in this file.

        home = "home"                 # store + catalog (--home / $EVIDENCE_HOME override)
        rules = "watch-rules"         # one rule per *.toml file; the file's stem is the rule's name
        log_level = "info"            # trace | debug | info | notice | warning | error
        # anchor_permissions = "refuse" # refuse | warn: `run` refuses to start (doctor: ✗) while the user it
                                        # runs as can write this file, a ca_file or the rules (or a folder above them)
        log_format = "text"           # text | json
        # timezone = "Europe/Berlin"  # times on certificates, indexes and the portal also in this zone (UTC beside it)

        [workers]                     # unset: sized from the host's cores
        # ingest = 4                  # files hashed and stored at once (default: cores, at least 4)
        # jobs = 4                    # notarize / certificate / archive jobs at once (default: 2 per core, 2…16)

        # Notaries: a rule's notary = ["qed", "tsa"] needs every one of them to confirm.
        # [notaries.qed]
        # kind = "qed"
        # base_url = "https://api.qed.digital/v1/"
        # api_key_env = "EVIDENCE_QED_API_KEY"      # or api_key_file = "/etc/evidence/qed.key"
        # poll_first = "10s"
        # poll_max = "10m"
        # stall_timeout = "60s"                     # raise on a slow uplink (any notary or account)
        #
        # [notaries.tsa]
        # kind = "rfc3161"
        # urls = ["https://tsa.example.org/tsr"]
        # tsa_cert_sha256 = "AB:CD:…"               # recommended: its signing certificate's SHA-256 fingerprint
        #                                           # (openssl x509 -in tsa.crt -noout -fingerprint -sha256)
        # ca_file = "/etc/evidence/tsa-ca.pem"      # or/and: the TSA's root CA, obtained from the TSA (one root)

        # Archive accounts: a rule's archive = "NAME". `evidence accounts check` proves them.
        [archives.vault]
        kind = "local"
        path = "archive"

        \(Self.accountExamples)

        # The auditor portal, `evidence serve`: read-only pages, certificate and bundle downloads.
        # [serve]
        # listen = "127.0.0.1:8480"                    # loopback; another address needs allow_remote = true
        # user = "auditor"                             # HTTP Basic user, with:
        # password_file = "/etc/evidence/portal.pass"  # mode 0600; or password_env = "EVIDENCE_PORTAL_PASSWORD"
        # token_env = "EVIDENCE_PORTAL_TOKEN"          # and/or a bearer token (or token_file)

        # Prometheus /metrics, /healthz and /readyz from `evidence run` (no table: no port opened).
        # [metrics]
        # listen = "127.0.0.1:9464"                    # loopback; another address needs allow_remote = true

        # Time-stamp the custody log's head with an rfc3161 notary above, so that even someone who
        # can rewrite the catalog cannot cut the log unnoticed (`evidence log verify` checks).
        # [custody]
        # anchor_tsa = "tsa"                           # the name of an rfc3161 notary
        # anchor_every = "1h"                          # and once more when evidence run stops
        # anchor_archive = "vault"                     # copy each anchor to an [archives] account

        """

    /// A commented example account of every remote kind, from the provider registry.
    static var accountExamples: String {
        ProviderRegistry.all.filter { $0.kind != .local }.map { d in
            d.example.map { "# " + $0 }.joined(separator: "\n")
        }.joined(separator: "\n#\n")
    }

    static func ruleText(drop: String) -> String {
        """
        # watch-rules/drop.toml — written by `evidence init`; the rule's name is "drop".
        # Check with: evidence --config ../evidence.toml rules check
        path = "\(drop)"
        include = ["*"]
        settle = "30s"                # taken once unchanged for 30 s (size, mtime, inode)
        # settle_max = "5m"           # a file changing again after it was taken waits twice as
                                      # long each time, up to this (a slow upload stays one item)
        # empty = "skip"              # 0-byte files: "take" (default, flagged empty) or "skip"
        after = "keep"                # keep | "delete" | "move:DIR": only once archived and verified
        # notary = ["qed", "tsa"]     # names of [notaries.NAME] in evidence.toml
        archive = "vault"
        remote_path = "{rule}/{yyyy}/{mm}/{dd}/{sha8}-{name}"

        [share]                       # for a local archive the "link" is the file:// URL
        access = "open"

        # [labels]                    # printed on each item's certificate; a sidecar NAME.json beside
        # agency = "Riverside PD"     # a file overrides them (agency, custodian, case, officer,
        # custodian = "Records Unit"  # device, location)

        """
    }
}
