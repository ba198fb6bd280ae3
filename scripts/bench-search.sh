#!/bin/sh
# bench-search.sh: perfmod search's speed on GPT-3 175B over 1,024 A100s (roofline and tile-mlp), against the CLI run once per configuration in a shell loop, measured in the same run.
# Usage: scripts/bench-search.sh [PERFMOD]   (default ./run from the build tree)
set -eu
PM=${1:-./run}
export OPENBLAS_NUM_THREADS=1      # the search's threads are its own
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-search.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
A="--model gpt3-175b --gpu a100 --gpus 1024 --global-batch 1536 --seq 2048"
now () { date +%s.%N; }

for pred in roofline tile-mlp; do
  t0=$(now)
  "$PM" search $A --predictor $pred --format json > "$TMP/$pred.json" 2>/dev/null
  t1=$(now)
  jq -r --arg p "$pred" --arg wall "$(echo "$t1 - $t0" | bc -l)" \
    '"search \($p): \(.configurations) configurations (\(.predicted) predicted) in \(.seconds | . * 1000 | round / 1000) s in-process, \($wall | tonumber | . * 100 | round / 100) s wall: \(.configurations / .seconds | round) configurations/s"' \
    "$TMP/$pred.json"
done

# The baseline: the CLI once per configuration (what a shell loop around perfmod can do),
# over the first 100 configurations the search predicted best, with roofline.
"$PM" search $A --predictor roofline --top 100 --format csv | tail -n +2 |
  sed 's/^[0-9]*,"\([^"]*\)".*/\1/' > "$TMP/strategies"
n=$(wc -l < "$TMP/strategies")
t0=$(now)
while read -r s; do
  "$PM" --model gpt3-175b --gpu a100 --mode train --batch 1536 --seq 2048 --nodes 128 \
    --predictor roofline --strategy "$s" --format csv > /dev/null 2>&1
done < "$TMP/strategies"
t1=$(now)
loop=$(echo "$n / ($t1 - $t0)" | bc -l)
rate=$(jq '.configurations / .seconds' "$TMP/roofline.json")
printf 'baseline: the CLI in a shell loop, %d configurations: %.0f configurations/s\n' "$n" "$loop"
printf 'ratio: search / shell loop = %.0fx (roofline)\n' "$(echo "$rate / $loop" | bc -l)"
# The peer: Calculon's own evaluation loop (scripts/bench-calculon.sh) when CALCULON_DIR
# names a checkout of github.com/calculon-ai/calculon, measured in this run; else the
# figure that script measured on the 2-core development machine (doc/search.md).
peer=
if [ -n "${CALCULON_DIR:-}" ]; then
  peer=$(sh "$(dirname "$0")/bench-calculon.sh" "$CALCULON_DIR" 2>/dev/null |
         sed -n 's/.*: \([0-9.]*\) configurations\/s.*/\1/p')
fi
if [ -n "$peer" ]; then
  printf 'peer: Calculon, measured in this run (one process): %.0f configurations/s\n' "$peer"
else
  peer=320
  echo "peer: Calculon, 320 configurations/s per core (scripts/bench-calculon.sh on a 20,000-configuration sample of its 11.7M-configuration space for the same case, 2026-11-25; set CALCULON_DIR to measure it here)"
fi
printf 'ratio: search on %d threads / Calculon in one process = %.0fx per configuration (roofline; the spaces differ: doc/search.md)\n' \
  "$(nproc)" "$(echo "$rate / $peer" | bc -l)"
echo "targets (issue 22): roofline full space <= 10 s and >= 100,000 configurations/s; tile-mlp <= 60 s"

# A MoE model (issue 31): DeepSeek-V3 over 2,048 H100s, CPU per configuration on one thread
# and two: the process's user + system time by bash's `times` (GNU time is not assumed), the
# least of three runs each.
D="--model deepseek-v3 --gpu h100 --gpus 2048 --global-batch 4096 --seq 4096 --predictor roofline --format json"
cpu_of () {   # cpu_of JOBS: "wall_s cpu_s" of one search, the least of three (a shared
              # machine's neighbours only ever add time)
  for r in 1 2 3; do
    t0=$(now)
    bash -c 'PM=$1; shift; "$PM" search "$@" > /dev/null 2>&1; times' sh "$PM" $D --jobs "$1" > "$TMP/times"
    t1=$(now)
    awk -v w="$(echo "$t1 - $t0" | bc -l)" 'NR == 2 {
         split ($1, u, "m"); split ($2, s, "m"); sub (/s$/, "", u[2]); sub (/s$/, "", s[2])
         printf "%.3f %.3f\n", w, u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$TMP/times"
  done | sort -n -k2 | awk 'NR == 1 { c = $2 } { if (w == "" || $1 < w) w = $1 } END { print w, c }'
}
# per configuration searched, and per one whose times were predicted (the
# rest pruned before, two thirds of them by the memory model)
set -- $("$PM" search $D --jobs 1 --top 1 2>/dev/null | jq -r '.configurations, .predicted')
n=$1 np=$2
set -- $(cpu_of 1) $(cpu_of 2)
printf 'DeepSeek-V3, 2,048 H100, roofline: %d configurations, %d predicted; --jobs 1: %.2f s wall, %.2f s CPU = %.1f us CPU per configuration (%.1f per predicted one); --jobs 2: %.2f s wall, %.2f s CPU\n' \
  "$n" "$np" "$1" "$2" "$(echo "$2 / $n * 1000000" | bc -l)" "$(echo "$2 / $np * 1000000" | bc -l)" "$3" "$4"
printf 'ratio: --jobs 2 / --jobs 1 = %.2fx the CPU, %.2fx the wall speed\n' \
  "$(echo "$4 / $2" | bc -l)" "$(echo "$1 / $3" | bc -l)"
echo "targets (issue 31): <= 30 us CPU per configuration; --jobs 2 <= 1.25x the CPU with >= 1.6x the wall speed on 2 idle cores"
