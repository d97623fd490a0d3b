#!/usr/bin/env bash
# make test: builds the tests once, then runs the test binary in four processes (passes), one after
# another. Swift's cooperative pool has one thread per core (two here), and Swift Testing runs
# synchronous tests on it: a test that waits for openssl, qpdf or its own CPU-bound loop holds
# a thread, and with two of them held every async test beside it stalls. Time-bounded tests
# (HTTP, notary, sandbox, job runner) once starved for 16 s that way, so they run apart:
#   local      synchronous, tool- and CPU-bound: store, catalog, config, certificate, media,
#              and the fuzz corpus replay (committed corpora and seeded mutations)
#   services   async and time-bounded: HTTP client, notaries, sandbox emulations, providers,
#              metrics, portal
#   watch      real inotify and job leases (EvidenceWatchTests, EvidencePipelineTests)
#   cli        end-to-end: evidence run / evidence-sandbox processes, SIGKILL, short soaks
# `scripts/test.sh --long` (make test-long) runs instead the long end-to-end runs: the suites
# named `…LongTests` in the cli and peer targets (crash loops, the fault soak, 1,000-file
# bursts, the 250-item descriptor count, 110 MB syncs), which the cli pass skips. CI runs both.
# Every pass runs even after one fails; the failures are repeated at the end, so the tail of
# a CI log names them. Logs: .build/test-logs/PASS.txt. Extra arguments go to swift.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
logs=${EVIDENCE_TEST_LOGS:-.build/test-logs}
long=false
if [ "${1:-}" = --long ]; then long=true; shift; fi

passes=(
  "local|EvidenceStoreTests EvidenceS3Tests EvidenceCatalogTests EvidenceConfigTests EvidenceCertificateTests EvidenceMediaTests EvidenceFuzzingTests"
  "services|EvidenceHTTPTests EvidenceNotaryTests EvidenceSandboxTests EvidenceArchiveTests EvidenceMetricsTests EvidencePortalTests"
  "watch|EvidenceWatchTests EvidencePipelineTests"
  "cli|EvidenceCLITests EvidencePeerTests"
)
# A new test target must be placed in a pass, or it would silently never run.
for dir in Tests/*/; do
  target=$(basename "$dir")
  # A here-string, not a pipe: under pipefail, grep -q leaving early could fail printf with SIGPIPE.
  grep -qw "$target" <<<"${passes[*]}" || { echo "scripts/test.sh: Tests/$target is in no pass: add it to one" >&2; exit 2; }
done

mkdir -p "$logs"
# The map matches the code: docs/ARCHITECTURE.md's module and C-target tables list every target
# of Package.swift with its folder.
python3 scripts/check-architecture.py Package.swift docs/ARCHITECTURE.md || {
  echo "scripts/test.sh: docs/ARCHITECTURE.md's module tables differ from Package.swift (above): fix the document" >&2; exit 2; }
"$swift" build --build-tests "$@" 2>&1 | tee "$logs/build.txt"
((PIPESTATUS[0] == 0)) || exit 1
# Zero warnings from our own files (a dependency's warnings are not ours to fix). A clean
# build, as CI's, compiles every file; an incremental one shows only what it recompiled.
warnings=$(grep -E "^$PWD/(Sources|Support|Tests)/[^:]+:[0-9]+:[0-9]+: warning:" "$logs/build.txt" | sort -u)
if [ -n "$warnings" ]; then
  echo "== make test: FAILED: the build printed warnings from our own files:"
  printf '%s\n' "$warnings" | head -40 | sed 's/^/  /'
  exit 1
fi

# The test binary itself, not `swift test --skip-build`: SwiftPM plans the whole package again
# before each pass (5 s each here), and the binary runs the same Swift Testing entry point.
bin=$("$swift" build --show-bin-path "$@" 2>/dev/null)
testBinary=$(ls -d "$bin"/*PackageTests.xctest 2>/dev/null | head -1)
runTests() {
  if [ -n "$testBinary" ]; then
    NO_COLOR=1 "$testBinary" --testing-library swift-testing "$@"
  else
    "$swift" test --skip-build --disable-xctest "$@" "${swiftArgs[@]}"
  fi
}
swiftArgs=("$@")

failed=()
summary=()
# The long suites, by name: the cli pass skips them, the long pass runs only them.
longSuites='\.[A-Za-z0-9]+LongTests/'
$long && passes=("long|EvidenceCLITests EvidencePeerTests")
for pass in "${passes[@]}"; do
  name=${pass%%|*}
  filters=()
  if [ "$name" = long ]; then
    filters=(--filter "$longSuites")
  else
    for target in ${pass#*|}; do filters+=(--filter "$target"); done
    [ "$name" = cli ] && filters+=(--skip "$longSuites")
  fi
  # Tests of the cli and long passes each take one of EVIDENCE_TEST_PARALLEL slots (.ownThread).
  # Most of a cli-pass test is waiting on its processes (about 1.6 of 2 cores busy with 4
  # slots); the long runs are CPU-bound bursts and keep 2, as before.
  slots=${EVIDENCE_TEST_PARALLEL:-4}
  [ "$name" = long ] && slots=${EVIDENCE_TEST_PARALLEL:-2}
  echo "== make test: pass $name (log: $logs/$name.txt)"
  start=$(date +%s)
  EVIDENCE_TEST_PARALLEL=$slots runTests "${filters[@]}" 2>&1 | tee "$logs/$name.txt"
  rc=${PIPESTATUS[0]}
  result=$(grep "Test run with" "$logs/$name.txt" | tail -1)
  summary+=("$name: ${result:-no result line (exit $rc)} [$(( $(date +%s) - start )) s]")
  # What the pass's time went to: the costliest tests by their time in a slot (.ownThread).
  slow=$(grep -a '^◷ slot' "$logs/$name.txt" | sort -k3,3 -rn | head -8)
  [ -z "$slow" ] || summary+=("$(sed 's/^/    /' <<<"$slow")")
  ((rc == 0)) || failed+=("$name")
done

echo
echo "== make test: summary"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "== make test: FAILED in ${failed[*]}; the issues (first 300 characters of each):"
  for name in "${failed[@]}"; do
    # Failed expectations, and for a crash its message and the top of the crashed thread.
    awk '/^✘ Test run with/ { next }
         /^✘ Test .* (recorded an issue|failed after)/ || /Program crashed|Fatal error|unexpected signal/ { print; next }
         /error: Process .* (exited|signal)/ { print; next }
         / crashed:$/ { c = 6 } c > 0 { print; c-- }' "$logs/$name.txt" \
      | head -25 | cut -c1-300 | sed "s/^/  [$name] /"
  done
  exit 1
fi
echo "== make test: every pass passed"
