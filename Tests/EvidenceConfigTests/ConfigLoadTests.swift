import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

/// The `evidence.toml` example of DESIGN.md, verbatim.
let designExampleConfig = """
# evidence.toml
home = "/var/lib/evidence"            # store + catalog; --home / $EVIDENCE_HOME override
rules = "watch-rules"                 # folder of rule files; --rules overrides
log_level = "info"                    # trace | debug | info | notice | warning | error
log_format = "text"                   # text | json

[workers]
ingest = 2
jobs = 4

[notaries.qed]                        # the table's name ("qed") is what rules refer to
kind = "qed"
base_url = "https://api.qed.digital/v1/"
api_key_env = "EVIDENCE_QED_API_KEY"  # or api_key_file = "/etc/evidence/qed.key" (must be 0600)
poll_first = "10s"
poll_max = "10m"

[notaries.tsa]
kind = "rfc3161"
urls = ["https://tsa.example.org/tsr"]
ca_file = "/etc/evidence/tsa-ca.pem"  # required: the TSA's CA, from the TSA

[archives.office]
kind = "owncloud"                     # owncloud | dropbox | box | sharefile | local
url = "https://cloud.example.org"
user = "evidence"
password_file = "/etc/evidence/owncloud.pass"
# tls_ca_file = "/etc/evidence/private-ca.pem"   (any HTTP account: extra trusted CA)

[archives.vault]
kind = "local"
path = "/srv/evidence-archive"
"""

@Suite struct ConfigLoadTests {
    @Test func noConfigAnywhereGivesEmbeddedDefaults() throws {
        let dir = TempDir()
        let config = try ConfigLoader.load(path: nil, environment: [:], currentDirectory: dir.path)
        #expect(config == EvidenceConfig.embeddedDefaults)
        #expect(config.file == nil)
        #expect(config.home == nil)
        #expect(config.logLevel == .info)
        #expect(config.logFormat == .text)
        // Sized from the host: on 2 cores, 4 ingest workers and 4 job workers; on 8, 8 and 16.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        #expect(config.workers == Workers(ingest: min(16, max(4, cores)), jobs: min(16, max(2, 2 * cores))))
        #expect(Workers.hostJobs(cores: 1) == 2 && Workers.hostJobs(cores: 2) == 4 && Workers.hostJobs(cores: 64) == 16)
        #expect(Workers.hostIngest(cores: 2) == 4 && Workers.hostIngest(cores: 12) == 12)
        #expect(config.notaries.isEmpty && config.archives.isEmpty)
    }

    @Test func evidenceTomlInCurrentDirectoryIsFound() throws {
        let dir = TempDir()
        dir.write("evidence.toml", "log_level = \"debug\"\n")
        let config = try ConfigLoader.load(path: nil, environment: [:], currentDirectory: dir.path)
        #expect(config.file == dir.path + "/evidence.toml")
        #expect(config.logLevel == .debug)
    }

    @Test func environmentVariableWinsOverCurrentDirectory() throws {
        let dir = TempDir()
        dir.write("evidence.toml", "log_level = \"debug\"\n")
        let other = dir.write("etc/other.toml", "log_level = \"error\"\n")
        let config = try ConfigLoader.load(path: nil, environment: ["EVIDENCE_CONFIG": other], currentDirectory: dir.path)
        #expect(config.file == other)
        #expect(config.logLevel == .error)
    }

    @Test func explicitPathMustExist() throws {
        let dir = TempDir()
        let error = configError { try ConfigLoader.load(path: "missing.toml", environment: [:], currentDirectory: dir.path) }
        #expect(error?.description == "missing.toml: no such file")
    }

    @Test func designExampleParsesToExpectedValues() throws {
        let dir = TempDir()
        let config = try loadConfig(designExampleConfig, in: dir)
        #expect(config.file == dir.path + "/evidence.toml")
        #expect(config.home == "/var/lib/evidence")
        #expect(config.rulesDir == dir.path + "/watch-rules")
        #expect(config.logLevel == .info && config.logFormat == .text)
        #expect(config.workers == Workers(ingest: 2, jobs: 4))
        #expect(config.notaries["qed"] == NotaryConfig(
            name: "qed", kind: .qed, baseURL: "https://api.qed.digital/v1/", apiKeyEnv: "EVIDENCE_QED_API_KEY",
            pollFirst: 10, pollMax: 600))
        #expect(config.notaries["qed"]?.apiKey == .env("EVIDENCE_QED_API_KEY"))
        #expect(config.notaries["tsa"] == NotaryConfig(
            name: "tsa", kind: .rfc3161, urls: ["https://tsa.example.org/tsr"], caFile: "/etc/evidence/tsa-ca.pem"))
        #expect(config.archives["office"] == ArchiveConfig(name: "office", kind: .owncloud, settings: [
            "url": "https://cloud.example.org", "user": "evidence", "password_file": "/etc/evidence/owncloud.pass",
        ]))
        #expect(config.archives["office"]?.secret("password") == .file("/etc/evidence/owncloud.pass"))
        #expect(config.archives["vault"]?.path == "/srv/evidence-archive")
        #expect(config.archives["vault"]?.kind == .local)
        #expect(config.notaries.count == 2 && config.archives.count == 2)
    }

    @Test func relativePathsResolveAgainstTheConfigFile() throws {
        let dir = TempDir()
        let config = try loadConfig("""
            home = "data"
            rules = "./conf/../watch-rules"
            [notaries.qed]
            kind = "qed"
            api_key_file = "keys/qed.key"
            tls_ca_file = "/abs/ca.pem"
            [archives.vault]
            kind = "local"
            path = "../archive"
            """, in: dir)
        let parent = (dir.path as NSString).deletingLastPathComponent
        #expect(config.home == dir.path + "/data")
        #expect(config.rulesDir == dir.path + "/watch-rules")
        #expect(config.notaries["qed"]?.apiKeyFile == dir.path + "/keys/qed.key")
        #expect(config.notaries["qed"]?.tlsCAFile == "/abs/ca.pem")
        #expect(config.archives["vault"]?.path == parent + "/archive")
    }

    @Test func wrongTypeNamesFileLineAndField() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("home = \"/x\"\n\n[workers]\ningest = 2\njobs = \"4\"\n", in: dir) }
        #expect(error == ConfigError(
            file: dir.path + "/evidence.toml", line: 5, field: "workers.jobs", message: "expected an integer, found string"))
        #expect(error?.description == "\(dir.path)/evidence.toml:5: field `workers.jobs`: expected an integer, found string")
    }

    @Test func wrongTypeOnADottedKeyIsLocated() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("# c\nworkers.ingest = true\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "workers.ingest")
        #expect(error?.message == "expected an integer, found boolean")
    }

    @Test func wrongTypeInsideANotaryIsLocated() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.tsa]
            kind = "rfc3161"
            urls = "https://tsa.example.org"
            """, in: dir) }
        #expect(error?.line == 3)
        #expect(error?.field == "notaries.tsa.urls")
        #expect(error?.message == "expected an array of strings, found string")
    }

    @Test func durationGivenAsNumberIsATypeError() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.qed]
            kind = "qed"
            api_key_env = "K"
            poll_first = 10
            """, in: dir) }
        #expect(error?.line == 4)
        #expect(error?.field == "notaries.qed.poll_first")
        #expect(error?.message == "expected a duration string like \"2s\", found integer")
    }

    @Test func badDurationIsWrappedWithFileLineAndField() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.qed]
            kind = "qed"
            api_key_env = "K"
            poll_max = "10x"
            """, in: dir) }
        #expect(error?.line == 4)
        #expect(error?.field == "notaries.qed.poll_max")
        #expect(error?.message.hasPrefix("invalid duration \"10x\"") == true)
    }

    @Test func unknownFieldIsRejectedWithSuggestion() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("[workers]\ningets = 2\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "workers.ingets")
        #expect(error?.message.hasPrefix("unknown field `ingets` (did you mean `ingest`?)") == true)
    }

    @Test func unknownFieldSuggestionToleratesSwappedLetters() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("[workers]\njbos = 3\n", in: dir) }
        #expect(error?.message.hasPrefix("unknown field `jbos` (did you mean `jobs`?)") == true)
    }

    @Test func unknownTopLevelFieldIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("home = \"/x\"\nlog_colour = \"red\"\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.field == "log_colour")
        #expect(error?.message.hasPrefix("unknown field `log_colour`") == true)
    }

    @Test func inlineApiKeyIsRejectedWithoutEchoingIt() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.qed]
            kind = "qed"
            api_key = "sk-live-123456"
            """, in: dir) }
        #expect(error?.line == 3)
        #expect(error?.field == "notaries.qed.api_key")
        #expect(error?.message.contains("`api_key_env`") == true)
        #expect(error?.message.contains("`api_key_file`") == true)
        #expect(error?.description.contains("sk-live-123456") == false)
    }

    @Test func inlineArchivePasswordIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [archives.office]
            kind = "owncloud"
            url = "https://cloud.example.org"
            user = "evidence"
            password = "hunter2"
            """, in: dir) }
        #expect(error?.field == "archives.office.password")
        #expect(error?.line == 5)
        #expect(error?.message.contains("`password_env`") == true)
        #expect(error?.description.contains("hunter2") == false)
    }

    @Test func secretGivenBothAsEnvAndFileIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [notaries.qed]
            kind = "qed"
            api_key_env = "K"
            api_key_file = "/k"
            """, in: dir) }
        #expect(error?.field == "notaries.qed.api_key_file")
        #expect(error?.message == "set only one of `api_key_env` and `api_key_file`")
    }

    @Test func qedNotaryNeedsAnApiKey() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("[notaries.qed]\nkind = \"qed\"\n", in: dir) }
        #expect(error?.field == "notaries.qed.api_key_env")
        #expect(error?.line == 1)
    }

    @Test func invalidEnumValueListsTheChoices() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("log_level = \"verbose\"\n", in: dir) }
        #expect(error?.field == "log_level")
        #expect(error?.message == "invalid value \"verbose\"; expected one of: trace | debug | info | notice | warning | error")
    }

    @Test func workersOutOfRangeIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("[workers]\njobs = 0\n", in: dir) }
        #expect(error?.field == "workers.jobs")
        #expect(error?.message == "must be between 1 and 64, found 0")
    }

    @Test func archiveFieldUnknownForItsKindIsRejected() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("""
            [archives.vault]
            kind = "local"
            path = "/srv/a"
            url = "https://x.example"
            """, in: dir) }
        #expect(error?.field == "archives.vault.url")
        #expect(error?.line == 4)
        #expect(error?.message.hasPrefix("unknown field `url`") == true)
    }

    @Test func syntaxErrorReportsLineAndColumn() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("home = \"/x\"\nlog_level = = \"info\"\n", in: dir) }
        #expect(error?.line == 2)
        #expect(error?.column != nil)
        #expect(error?.field == nil)
        #expect(error?.message.hasPrefix("TOML syntax error") == true)
    }

    /// Found by `make fuzz`: toml++ asserts (SIGABRT in debug builds) on a table header whose key
    /// starts with a character no key can start with, instead of reporting a syntax error.
    @Test(arguments: ["[\u{0e}workers]\n", "[!]\n", "[é]\n", "[\r]\n", "[\n", "[[\t\u{01}]]\n", "[[[a]]]\n", "[\u{7f}]\n"])
    func tableHeaderWithAnImpossibleKeyIsASyntaxError(_ header: String) throws {
        let dir = TempDir()
        let error = configError { try loadConfig("home = \"/x\"\n  " + header, in: dir) }
        #expect(error?.line == 2)
        #expect(error?.column != nil)
        #expect(error?.message.hasPrefix("TOML syntax error") == true)
    }

    /// Found by `make fuzz`: more toml++ assertions on invalid TOML (see TOMLGuard).
    @Test(arguments: [("a = [}\n", 1), ("a = [\"x\",\n  # c\n}]\n", 3), ("when = 1979-05-27T;7:32300Z\n", 1)])
    func invalidTOMLThatCrashedTOMLKitIsASyntaxError(_ text: String, _ line: Int) throws {
        let dir = TempDir()
        let error = configError { try loadConfig("home = \"/x\"\n" + text, in: dir) }
        #expect(error?.line == line + 1)
        #expect(error?.message.hasPrefix("TOML syntax error") == true)
    }

    @Test func stringsCommentsDatesAndInlineTablesThatLookAlikeStillParse() throws {
        let dir = TempDir()
        let text = """
            home = "/x [} ,} 1979-05-27T;"   # [} in a comment, 2024-01-01T;
            [metrics]
            listen = '127.0.0.1:9464'
            [archives.vault]
            kind = "local"
            path = '''/srv/a,}'''
            """
        let config = try loadConfig(text, in: dir)
        #expect(config.home == "/x [} ,} 1979-05-27T;")
    }

    @Test(arguments: [("[notaries.qed]\nkind = \"qed\"\nbase_url = \"http://qed.example.org/v1/\"\napi_key_env = \"K\"\n", "notaries.qed.base_url"),
                      ("[archives.oc]\nkind = \"owncloud\"\nurl = \"http://cloud.example.org\"\nuser = \"u\"\npassword_env = \"P\"\n", "archives.oc.url"),
                      ("[archives.dbx]\nkind = \"dropbox\"\napp_key = \"k\"\napp_secret_env = \"S\"\nauth_url = \"http://10.0.0.5/token\"\n", "archives.dbx.auth_url")])
    func credentialsAreNeverSentOverPlainHTTPToAnotherHost(_ table: String, _ field: String) throws {
        let dir = TempDir()
        let error = configError { try loadConfig(table, in: dir) }
        #expect(error?.field == field, "\(String(describing: error))")
        #expect(error?.message.contains("use https://") == true)
    }

    @Test func plainHTTPToLoopbackStaysAllowed() throws {
        let dir = TempDir()
        for host in ["127.0.0.1:8080", "localhost:9", "[::1]:80"] {
            let config = try loadConfig("[notaries.qed]\nkind = \"qed\"\nbase_url = \"http://\(host)/v1/\"\napi_key_env = \"K\"\n", in: dir)
            #expect(config.notaries["qed"]?.baseURL == "http://\(host)/v1/")
        }
    }

    /// The date check once applied its condition to `t` only, so every bare `T` (a table or key
    /// name such as `Team`) was refused as "a date's `T` must be followed by a time".
    @Test func anUppercaseTInANameIsNotTakenForADate() throws {
        let dir = TempDir()
        let config = try loadConfig("[archives.Team]\nkind = \"local\"\npath = \"/srv/T\"\n", in: dir)
        #expect(config.archives["Team"] != nil)
    }

    @Test func quotedAndSpacedTableHeadersStillParse() throws {
        let dir = TempDir()
        let config = try loadConfig("[ notaries . \"q d\" ]\nkind = \"qed\"\nbase_url = \"https://h/v1/\"\napi_key_env = \"K\"\n", in: dir)
        #expect(config.notaries["q d"]?.kind == .qed)
    }

    /// A file saved with Windows line ends: errors still name the right line ("\r\n" is one
    /// Character in Swift, so splitting on "\n" alone saw a single line).
    @Test func crlfFileErrorsNameTheRightLine() throws {
        let dir = TempDir()
        let error = configError { try loadConfig("home = \"/x\"\r\n\r\n[workers]\r\njobs = \"4\"\r\n", in: dir) }
        #expect(error?.line == 4)
        #expect(error?.field == "workers.jobs")
    }
}
