#!/bin/sh
# t1160-search-gpus.sh: perfmod search --gpu A,B,...: each GPU searched, their best layouts ranked together by the objective at each GPU's own price, each the GPU's own search's; bad lists refused with nothing on stdout.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 9

args="search --model llama3-8b --gpus 8 --global-batch 64 --seq 4096 --predictor roofline --tokens 1e9"
# each GPU alone, at its price: the best's cost
for g in h100:2.5 h200:3.5 b200:6; do
  run_pm $args --gpu ${g%:*} --price-per-gpu-hour ${g#*:} --objective cost --top 1 --format csv
  eval "cost_${g%:*}=\$(awk -F, 'NR == 2 {print \$NF}' \"\$TMP/out\")"
done
run_pm $args --gpu h100,h200,b200 --price-per-gpu-hour 2.5,3.5,6 --objective cost --top 50 --format csv
ok $([ "$rc" -eq 0 ] && [ "$(head -1 "$TMP/out")" = \
  rank,gpu,strategy,step_ms,tokens_per_s,mfu,memory_gib,train_hours,cost_usd ]; echo $?) \
  "CSV with a gpu column"
# the cheapest row of a GPU in the merged ranking is that GPU's own best (H200's, dearer
# than fifty of the others, is cut from the top 50)
best () { awk -F, -v g="$1" 'NR > 1 && $2 == g {print $NF; exit}' "$TMP/out"; }
ok $([ "$(best NVIDIA_H100_80GB_HBM3)" = "$cost_h100" ] && [ "$(best b200-sxm)" = "$cost_b200" ] &&
     [ -z "$(best h200-sxm)" ] && [ -n "$cost_h100" ]; echo $?) \
  "a GPU's first row is its own search's best at its own price ($cost_h100, $cost_b200)"
ok $(awk -F, 'NR > 2 && $NF + 0 < prev {bad = 1} NR > 1 {prev = $NF + 0} END {exit bad || NR < 4}' \
     "$TMP/out"; echo $?) "ranked by cost, cheapest first, across the GPUs"
# the table's line per GPU: its own best, whatever the ranking shows
run_pm $args --gpu h100,h200,b200 --price-per-gpu-hour 2.5,3.5,6 --objective cost --top 3
want=$(awk -v c="$cost_h200" 'BEGIN {printf "$%.2f", c}')
ok $(grep '^  h200-sxm ' "$TMP/out" | grep -qF "its best" &&
     grep '^  h200-sxm ' "$TMP/out" | grep -qF "$want"; echo $?) \
  "the table says each GPU's own best, H200's $want among them"
run_pm $args --gpu h100,b200 --price-per-gpu-hour 2.5,6 --top 3 --format json
ok $([ "$(jq -r '[.searched[].gpu] | join(" ")' "$TMP/out")" = "NVIDIA_H100_80GB_HBM3 b200-sxm" ] &&
     [ "$(jq -r '.best | length' "$TMP/out")" = 3 ] &&
     jq -e '.best[0].step_ms <= .best[1].step_ms and .best[0].gpu == "b200-sxm" and
            .global_batch == 64 and .seq == 4096 and .searched[1].pruned.memory >= 0' \
       "$TMP/out" >/dev/null
     echo $?) "JSON: each GPU searched, the best ranked by time (B200 first) with their gpu"

expect_one_line 2 'objective cost over a --gpu list needs --tokens' \
  "cost over a list without --tokens (every layout free) is refused" -- \
  search --model llama3-8b --gpus 8 --global-batch 64 --predictor roofline --gpu h100,a100 \
  --price-per-gpu-hour 4,1 --objective cost
expect_one_line 2 '2 prices for 3 GPUs' "a price list of another length is refused" -- \
  $args --gpu h100,h200,b200 --price-per-gpu-hour 2.5,3.5
run_pm $args --gpu h100,nope
ok $([ "$rc" -eq 2 ] && grep -q nope "$TMP/err" && [ ! -s "$TMP/out" ]; echo $?) \
  "an unknown GPU in the list: exit 2 naming it, nothing on stdout"
expect_one_line 2 '--plot takes one GPU' "--plot with a list is refused" -- \
  $args --gpu h100,h200 --plot "$TMP/x.svg"

finish
