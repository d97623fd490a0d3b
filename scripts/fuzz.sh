#!/usr/bin/env bash
# make fuzz: builds Fuzz/ (one libFuzzer executable per parser family, with AddressSanitizer)
# and runs each for a bounded time on a working copy of its seed corpus Fuzz/corpus/<target>.
# Prints target / runs / runs per second / coverage / corpus size / crashes and exits 1 when any
# target crashed, hung or broke its contract; the input is kept as Fuzz/crashes/<target>/crash-*.
#
# usage: fuzz.sh [target…]   env: FUZZ_SECONDS (60 per target), FUZZ_SCRATCH (Fuzz/.build)

set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
scratch=${FUZZ_SCRATCH:-$PWD/Fuzz/.build}
all=(config rule qed rfc3161 manifest custody providers webdav sandbox-json)
targets=("$@"); ((${#targets[@]})) || targets=("${all[@]}")

echo "== building Fuzz/ with -sanitize=fuzzer,address (first build takes several minutes)"
# The linker warns once per ASan symbol; keep the rest, and stop on a failed build (never fuzz stale binaries).
swift build --package-path Fuzz --scratch-path "$scratch" \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library 2>&1 \
  | { grep -v -e "warning: Cannot export local symbol" -e "^ld.gold: warning" || true; }
((PIPESTATUS[0] == 0)) || { echo "fuzz: the build of Fuzz/ failed"; exit 2; }
bin=$(swift build --package-path Fuzz --scratch-path "$scratch" --show-bin-path \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz-$t" ] || { echo "fuzz: $bin/fuzz-$t was not built"; exit 2; }
done

# Swift's own backtracer would symbolicate for seconds on every crash; ASan reports instead.
# Leaks are not checked: the Swift runtime and Foundation keep caches alive until exit.
export SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:symbolize=1
rows=()
failed=0
for t in "${targets[@]}"; do
  work="$scratch/corpus/$t"; crashes="Fuzz/crashes/$t"; log="$scratch/fuzz-$t.log"
  mkdir -p "$work" "$crashes"
  before=$(find "$crashes" -type f | wc -l)
  echo "== fuzz-$t: ${seconds}s (log: $log)"
  status=0
  "$bin/fuzz-$t" "$work" "Fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  corpus=$(find "$work" -type f | wc -l)
  found=$(( $(find "$crashes" -type f | wc -l) - before ))
  if ((status != 0 || found > 0)); then
    failed=1
    echo "   fuzz-$t FAILED (exit $status); the end of its log:"
    grep -v '^    #' "$log" | tail -25 | sed 's/^/   | /'
  fi
  rows+=("$(printf '%-13s %10s %9s %8s %8s %8s' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$corpus" "$found")")
done

echo
printf '%-13s %10s %9s %8s %8s %8s\n' target runs runs/s cov corpus crashes
printf '%s\n' "${rows[@]}"
if ((failed)); then
  echo "fuzz: FAILED — inputs are in Fuzz/crashes/; reproduce with $bin/fuzz-<target> Fuzz/crashes/<target>/<file>"
  exit 1
fi
echo "fuzz: no crash in ${#targets[@]} targets × ${seconds}s"
