#!/bin/sh
# bench-serve.sh: perfmod serve's and search --serve's speed: a 1,000-request simulation's time (the same command's single-request run measured in the same run as the baseline, so the difference is the simulation's), and search --serve's configurations a second against perfmod serve run once per configuration in a shell loop.
# Usage: scripts/bench-serve.sh [PERFMOD]   (default ./run from the build tree)
set -eu
PM=${1:-./run}
export OPENBLAS_NUM_THREADS=1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-serve.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
now () { date +%s.%N; }
# best of 5: the least the machine's other work adds
best () {  # best CMD...: the shortest wall time of 5 runs, seconds
  for i in 1 2 3 4 5; do
    t0=$(now); "$@" > /dev/null 2>&1; t1=$(now)
    echo "$t0 $t1"
  done | awk '{ t = $2 - $1; if (NR == 1 || t < b) b = t } END { printf "%.6f", b }'
}
for args in "--model qwen3-32b --strategy tp=2 --concurrency 100 --isl 1024 --osl 256" \
            "--model llama3.1-70b --dtype fp8 --strategy tp=4 --rate 5 --isl 1024 --osl 512"; do
  full=$(best "$PM" serve --gpu h100 $args --requests 1000 --format csv)
  one=$(best "$PM" serve --gpu h100 $args --requests 1 --format csv)
  printf 'serve %s: 1000 requests %.3f s, 1 request %.3f s (the process, the predictor, the model): the simulation %.0f ms\n' \
    "$args" "$full" "$one" "$(echo "($full - $one) * 1000" | bc -l)"
done
echo "target (issue 30): a 1,000-request run simulates in <= 100 ms of CPU with tile-mlp"

S="--model qwen3-32b --gpu h100 --gpus 8 --isl 2048 --osl 256"
"$PM" search --serve $S --jobs "$(nproc)" --format json > "$TMP/s.json" 2>/dev/null
"$PM" search --serve $S --jobs "$(nproc)" --format csv 2>/dev/null | tail -n +2 > "$TMP/s.csv"
rate=$(jq '.configurations / .seconds' "$TMP/s.json")
printf 'search --serve: %s configurations simulated in %.2f s on %d threads: %.0f configurations/s\n' \
  "$(jq .configurations "$TMP/s.json")" "$(jq .seconds "$TMP/s.json")" "$(nproc)" "$rate"
# the baseline: perfmod serve once per configuration (its first 20 aggregated points)
awk '{ split ($0, q, "\""); split (q[3], f, ","); if (q[2] !~ /^prefill/ && n++ < 20) print q[2], f[3], f[4] }' \
  "$TMP/s.csv" > "$TMP/points"
n=$(wc -l < "$TMP/points")
t0=$(now)
while read -r dep batch conc; do
  "$PM" serve --model qwen3-32b --gpu h100 --isl 2048 --osl 256 --strategy "$dep" \
    --max-batch "$batch" --concurrency "$conc" --requests $((conc * 4)) --format csv > /dev/null 2>&1
done < "$TMP/points"
t1=$(now)
loop=$(echo "$n / ($t1 - $t0)" | bc -l)
printf 'baseline: perfmod serve in a shell loop, %d configurations: %.0f configurations/s\n' "$n" "$loop"
printf 'ratio: search --serve / shell loop = %.1fx\n' "$(echo "$rate / $loop" | bc -l)"
echo "target (issue 30): >= 1,000 serving configurations/s on 2 cores"
