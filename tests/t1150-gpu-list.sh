#!/bin/sh
# t1150-gpu-list.sh: perfmod --gpu A,B,C: the same run on each GPU in one table side by side (text, CSV, JSON), each row the GPU's own prediction; bad lists refused with nothing on stdout.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 9

args="--model llama3-8b --mode train --batch 8 --seq 4096 --strategy dp=8 --predictor roofline"
# each GPU alone
for g in h100 h200 b200; do
  run_pm $args --gpu $g --format json
  eval "step_$g=\$(jq -r '.predictions[0].step_ms' \"\$TMP/out\")"
done
run_pm $args --gpu h100,h200,b200 --format csv
ok $([ "$rc" -eq 0 ] && [ "$(head -1 "$TMP/out")" = \
  gpu,predictor,step_ms,ttft_ms,tpot_ms,tokens_per_s,mfu,memory_gib,capacity_gib,oom ] &&
  [ "$(awk -F, 'NR > 1 {print $1}' "$TMP/out" | tr '\n' ' ')" = \
    "NVIDIA_H100_80GB_HBM3 h200-sxm b200-sxm " ]; echo $?) \
  "CSV: one row per GPU, in the order given"
ok $(awk -F, -v a="$step_h100" -v b="$step_h200" -v c="$step_b200" '
  function near(x, y) { d = x - y; if (d < 0) d = -d; return d <= 0.0005 }
  NR == 2 {o1 = near($3, a)} NR == 3 {o2 = near($3, b)} NR == 4 {o3 = near($3, c)}
  END {exit !(o1 && o2 && o3)}' "$TMP/out"; echo $?) \
  "each row's step_ms is that GPU's own prediction ($step_h100, $step_h200, $step_b200)"
ok $(awk -F, 'NR > 1 && ($4 != "" || $5 != "" || $10 != "false" || $3 + 0 <= 0) {bad = 1}
               END {exit bad || NR != 4}' "$TMP/out"
     echo $?) "a training step has no ttft or tpot: empty cells, not zeros"

run_pm $args --gpu h100,h200 --format json
ok $([ "$(jq -r '[.by_gpu[].gpu] | join(" ")' "$TMP/out")" = "NVIDIA_H100_80GB_HBM3 h200-sxm" ] &&
     [ "$(jq -r '.by_gpu[1].predictions[0].step_ms' "$TMP/out")" = "$step_h200" ]; echo $?) \
  "JSON: each GPU's whole answer under by_gpu"
run_pm $args --gpu h100,h200
ok $([ "$rc" -eq 0 ] && grep -q '^assumed on h200-sxm: the same (--gpu h200)$' "$TMP/out" &&
     grep -q '^h200-sxm  *roofline ' "$TMP/out"; echo $?) \
  "the table: the second GPU's assumptions the same but its name, a row per GPU"

run_pm $args --gpu h100,nope
ok $([ "$rc" -eq 2 ] && grep -q "nope" "$TMP/err" && [ ! -s "$TMP/out" ]; echo $?) \
  "an unknown GPU in the list: exit 2 naming it, nothing on stdout"
expect_one_line 2 "--format 'xml': expected table, csv or json" "a bad --format with a list is refused" -- \
  $args --gpu h100,h200 --format xml
expect_one_line 2 "an empty name in the list" "an empty name in the list is refused" -- \
  $args --gpu h100,
expect_one_line 2 "take one GPU" "--plot with a list is refused" -- \
  $args --gpu h100,h200 --plot "$TMP/x.svg"

finish
