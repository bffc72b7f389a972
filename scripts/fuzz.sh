#!/usr/bin/env bash
# Every parser of what a box or a provider prints, fuzzed for a fixed time.
# With cargo-fuzz installed: every target in fuzz/ (probe parsers and pulled-file checks) for
# SECS seconds each under libFuzzer. Without it: the proptest "never panics" properties over the
# same parsers (probe, Slurm, Kubernetes, providers, the pull's listings and checks, the queue),
# PROPTEST_CASES cases each (a bounded count, so a fixed time on a given machine), as a fallback.
# Usage: scripts/fuzz.sh [SECS]   (default 60; CASES=N sets the fallback's count, default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if cargo fuzz --version >/dev/null 2>&1; then
  cd fuzz
  for t in $(RUSTC_BOOTSTRAP=1 cargo fuzz list); do
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -- -max_total_time="$secs" -print_final_stats=1
  done
else
  echo "cargo-fuzz is not installed (cargo install cargo-fuzz): running the proptest parsers instead" >&2
  PROPTEST_CASES=${CASES:-20000} cargo test --lib never_panic
fi
