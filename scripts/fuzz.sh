#!/usr/bin/env bash
# Every parser of what a box or a provider prints, fuzzed for a fixed time.
# With cargo-fuzz installed: every target in fuzz/ (probe parsers and pulled-file checks) for
# SECS seconds each under libFuzzer. Without it: the proptest "never panics" properties over the
# same parsers (probe, Slurm, Kubernetes, providers, the pull's listings and checks, the queue),
# in rounds of CASES cases each, until SECS have passed in all. Proptest seeds every round
# afresh, so each round tries new inputs; a round still running when the time is up is stopped
# and not counted. A failing round stops the run and prints proptest's minimal failing input.
# Usage: scripts/fuzz.sh [SECS]   (default 60; CASES=N sets the fallback's round, default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if cargo fuzz --version >/dev/null 2>&1; then
  cd fuzz
  for t in $(RUSTC_BOOTSTRAP=1 cargo fuzz list); do
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -- -max_total_time="$secs" -print_final_stats=1
  done
  exit 0
fi
echo "cargo-fuzz is not installed (cargo install cargo-fuzz): running the proptest parsers" \
  "for ${secs}s instead" >&2
# Built once, before the clock starts; then only the test binary runs.
bin=$(cargo test --lib --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | head -n1)
[ -x "$bin" ] || { echo "could not find the library's test binary" >&2; exit 2; }
cases=${CASES:-2000}
properties=$("$bin" never_panic --list 2>/dev/null | grep -c ': test$')
end=$((SECONDS + secs))
rounds=0
while [ "$SECONDS" -lt "$end" ]; do
  rc=0
  PROPTEST_CASES=$cases timeout "$((end - SECONDS))" "$bin" never_panic -q >/tmp/fuzz-round.$$ 2>&1 \
    || rc=$?
  if [ "$rc" -eq 124 ]; then break; fi
  if [ "$rc" -ne 0 ]; then cat /tmp/fuzz-round.$$; rm -f /tmp/fuzz-round.$$; exit "$rc"; fi
  rounds=$((rounds + 1))
done
rm -f /tmp/fuzz-round.$$
echo "fuzz: $properties properties, $rounds rounds of $cases cases each in ${secs}s" \
  "($((rounds * cases)) inputs per property, $((rounds * cases * properties)) in all), no panic"
