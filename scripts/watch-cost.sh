#!/usr/bin/env bash
# CPU and memory of `rigwatch watch` against the dashboard, both on the demo fleet thirteen
# times over (104 boxes, a GPU reading and a probe cycle per box every 2 s, judged as live ones
# are), one after the other in one run. CPU from /proc/PID/stat, peak RSS from VmHWM.
# Usage: scripts/watch-cost.sh [DURATION]   (build first: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-30}
bin=${RIGWATCH:-target/release/rigwatch}   # RIGWATCH=path measures another build
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
hz=$(getconf CLK_TCK)

measure() { # PID LABEL
  local pid=$1 label=$2 before after
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  sleep "$duration"
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  awk -v b="$before" -v a="$after" -v hz="$hz" -v d="$duration" -v label="$label" \
    -v rss="$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")" \
    -v hwm="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")" \
    'BEGIN { printf "| %s | %.2f %% | %.1f MB | %.1f MB |\n", label, (a - b) / hz / d * 100, rss / 1024, hwm / 1024 }'
}

echo "| 104 demo boxes | CPU (% of one core) | RSS now | peak RSS |"
echo "|---|---:|---:|---:|"

"$bin" watch --demo --copies 13 --for $((duration + 10)) >/dev/null 2>&1 &
watch_pid=$!
trap 'kill "$watch_pid" 2>/dev/null || true' EXIT
sleep 5   # start-up: the demo backfills 40-55 minutes of history per box
measure "$watch_pid" "rigwatch watch --demo"
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true

sock="rigwatch-watch-cost-$$"
tmux -L "$sock" -f /dev/null new-session -d -x 160 -y 48 "$bin demo --copies 13"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true' EXIT
sleep 5
pane=$(tmux -L "$sock" display-message -p '#{pane_pid}')
if [ "$(cat "/proc/$pane/comm")" = rigwatch ]; then pid=$pane; else pid=$(pgrep -P "$pane" -x rigwatch); fi
measure "$pid" "dashboard (rigwatch demo, 160×48)"
