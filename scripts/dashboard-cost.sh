#!/usr/bin/env bash
# CPU and memory of the dashboard process itself at fleet scale: `rigwatch demo --copies 13`
# (104 boxes, every reading parsed and judged as for live hosts, one poll each 2 s) runs in a
# real terminal (tmux) for DURATION seconds; CPU from /proc/PID/stat, peak RSS from VmHWM.
# Usage: scripts/dashboard-cost.sh [DURATION]   (build first: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-60}
bin=${RIGWATCH:-target/release/rigwatch}   # RIGWATCH=path measures another build
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
sock="rigwatch-cost-$$"
tmux -L "$sock" -f /dev/null new-session -d -x 160 -y 48 "$bin demo --copies 13"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true' EXIT
sleep 5   # start-up: the demo backfills 40-55 minutes of history per box
# The pane's process is the shell tmux started, or rigwatch itself if the shell exec'd it.
pane=$(tmux -L "$sock" display-message -p '#{pane_pid}')
if [ "$(cat "/proc/$pane/comm")" = rigwatch ]; then pid=$pane; else pid=$(pgrep -P "$pane" -x rigwatch); fi
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
sleep "$duration"
after=$(ticks)
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
awk -v b="$before" -v a="$after" -v hz="$hz" -v d="$duration" -v rss="$rss_kib" -v hwm="$hwm_kib" 'BEGIN {
  printf "| hosts | CPU (%% of one core) | RSS now | peak RSS |\n|---:|---:|---:|---:|\n"
  printf "| 104 | %.2f %% | %.1f MB | %.1f MB |\n", (a - b) / hz / d * 100, rss / 1024, hwm / 1024 }'
