import EvidenceProcess
import Foundation
import EvidenceTesting
import Testing

/// The scripts that summarise test runs (`make test`, `make soak`) take the runner's real exit
/// status. Each runs here against a stand-in `swift` (a shell script, through `SWIFT`) whose
/// build and test results the test chooses, so a failing run must make the script fail.
@Suite("scripts: a failing run makes the summary fail", .ownThread)
struct ScriptCLITests {
    /// A fake `swift`: `build` prints `buildOutput` and exits 0; `test` prints a Swift Testing
    /// failure and exits 1 when its filters mention `failing`, else passes.
    func fakeSwift(in scratch: Scratch, buildOutput: String = "", failing: String) -> String {
        scratch.file("swift", """
            #!/usr/bin/env bash
            case "$1" in
              build) printf '%s\\n' "\(buildOutput)"; exit 0 ;;
              test)
                if [[ " $* " == *"\(failing)"* ]]; then
                  echo "✘ Test shouldWork() recorded an issue at X.swift:1:1: Expectation failed"
                  echo "✘ Test run with 1 test in 1 suite failed after 0.1 seconds with 1 issue."
                  exit 1
                fi
                echo "✔ Test run with 1 test in 1 suite passed after 0.1 seconds."
                exit 0 ;;
            esac
            exit 2
            """)
        chmod(scratch.path + "/swift", 0o755)
        return scratch.path + "/swift"
    }

    func script(_ name: String, swift: String, scratch: Scratch, extra: [String: String] = [:]) -> CLI.Result {
        CLI.exec(["bash", CLI.packageRoot + "/scripts/" + name], timeout: 120,
                 environment: ["SWIFT": swift, "EVIDENCE_TEST_LOGS": scratch.path + "/logs"].merging(extra) { $1 })
    }

    @Test("make soak exits 1 and says FAILED when the soak test run fails")
    func soakFailsWithItsRun() {
        let scratch = Scratch()
        let swift = fakeSwift(in: scratch, failing: "SoakLongTests")
        let r = script("soak.sh", swift: swift, scratch: scratch, extra: ["SOAK_SEED": "1"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("FAILED"))
        #expect(!r.stdout.contains("PASSED"))
    }

    @Test("make soak exits 0 when the soak test run passes")
    func soakPassesWithItsRun() {
        let scratch = Scratch()
        let swift = fakeSwift(in: scratch, failing: "no-such-filter")
        let r = script("soak.sh", swift: swift, scratch: scratch, extra: ["SOAK_SEED": "1"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("PASSED"))
    }

    @Test("make test exits 1 and names the pass when one pass fails; the others still run")
    func testScriptFailsWithAPass() {
        let scratch = Scratch()
        let swift = fakeSwift(in: scratch, failing: "EvidenceWatchTests")
        let r = script("test.sh", swift: swift, scratch: scratch)
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("FAILED in watch"))
        #expect(r.stdout.contains("[watch] ✘ Test shouldWork() recorded an issue"))
        #expect(r.stdout.contains("== make test: pass cli"), "a failed pass does not stop the later ones")
    }

    @Test("make test's cli pass skips the …LongTests suites; make test-long runs only them, and exits 1 when they fail")
    func longPassIsApartAndCounts() {
        let scratch = Scratch()
        // A stand-in that fails whenever it is asked to run the long suites.
        let swift = fakeSwift(in: scratch, failing: "--filter \\.[A-Za-z0-9]+LongTests/")
        let quick = script("test.sh", swift: swift, scratch: scratch)
        #expect(quick.status == 0, "the cli pass must not run the long suites: \(quick.stdout)")
        let long = CLI.exec(["bash", CLI.packageRoot + "/scripts/test.sh", "--long"], timeout: 120,
                            environment: ["SWIFT": swift, "EVIDENCE_TEST_LOGS": scratch.path + "/logs"])
        #expect(long.status == 1, "\(long.stdout)\(long.stderr)")
        #expect(long.stdout.contains("FAILED in long"))
        #expect(long.stdout.contains("== make test: pass long") && !long.stdout.contains("== make test: pass cli"))
    }

    @Test("make test exits 1 when the build prints a warning from one of our files, and not for a dependency's")
    func testScriptFailsOnOurWarnings() {
        let scratch = Scratch()
        let ours = CLI.packageRoot + "/Sources/EvidenceCore/Digest.swift:3:7: warning: variable 'x' was never used"
        let theirs = CLI.packageRoot + "/.build/checkouts/dep/Sources/X.swift:1:1: warning: deprecated"
        let failing = script("test.sh", swift: fakeSwift(in: scratch, buildOutput: ours, failing: "none"), scratch: scratch)
        #expect(failing.status == 1, "\(failing.stdout)")
        #expect(failing.stdout.contains("warnings from our own files"))
        #expect(failing.stdout.contains("Digest.swift:3:7"))

        let passing = script("test.sh", swift: fakeSwift(in: scratch, buildOutput: theirs, failing: "none"), scratch: scratch)
        #expect(passing.status == 0, "\(passing.stdout)")
        #expect(passing.stdout.contains("every pass passed"))
    }
}
