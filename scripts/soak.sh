#!/usr/bin/env bash
# make soak: the long versions of the crash loop and the fault soak (Tests/EvidenceCLITests/
# SoakCLITests.swift: SoakLongTests, whose short versions run in make test-long), then one table:
# scenario / files / kills / faults injected / lost / duplicates / requests inside a
# Retry-After window / wall time. Exit 1 when a scenario failed (lost, duplicated, early or
# anything else the test checks).
#
# usage: soak.sh [swift flags…]  (e.g. --scratch-path DIR, as make's SWIFTFLAGS)
# env: SOAK_FILES (500), SOAK_KILLS (20), SOAK_FAULT_FILES (40), SOAK_PROVIDERS ("dropbox"),
#      SOAK_SEED (random; printed, so a failure can be repeated)

set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
files=${SOAK_FILES:-500}
kills=${SOAK_KILLS:-20}
fault_files=${SOAK_FAULT_FILES:-40}
providers=${SOAK_PROVIDERS:-dropbox}
seed=${SOAK_SEED:-$((RANDOM * 3 + 1))}
report=$(mktemp /tmp/evidence-soak.XXXXXX)
trap 'rm -f "$report"' EXIT

"$swift" build --build-tests "$@" || exit 2
status=0
started=$(date +%s)
for provider in $providers; do
  echo "== soak: $files files, $kills SIGKILLs, then $fault_files files under faults; provider $provider; seed $seed"
  EVIDENCE_SOAK_FILES=$files EVIDENCE_SOAK_KILLS=$kills EVIDENCE_SOAK_FAULT_FILES=$fault_files \
  EVIDENCE_SOAK_PROVIDER=$provider EVIDENCE_SOAK_SEED=$seed EVIDENCE_SOAK_REPORT=$report \
    "$swift" test --disable-xctest --skip-build --filter SoakLongTests "$@" 2>&1 \
    | grep --line-buffered -v -e '^soak	' -e '^\['
  # The runner's status, read at once: after `… | grep … || true` PIPESTATUS held true's 0,
  # so a failed scenario once printed PASSED.
  rc=${PIPESTATUS[0]}
  ((rc == 0)) || status=1
done

echo
{
  printf 'scenario\tfiles\tkills\tfaults injected\tlost\tduplicates\tinside Retry-After\twall time (s)\n'
  cat "$report"
} | column -t -s $'\t'
echo "seed $seed · $(($(date +%s) - started)) s in all · $([ $status = 0 ] && echo PASSED || echo FAILED)"
exit $status
