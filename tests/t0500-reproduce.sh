#!/bin/sh
# t0500-reproduce.sh: perfmod reproduce gives the paper's roofline means and every row within 0.5 points.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
neusight_or_skip
plan 16

run_pm reproduce --neusight "$NEUSIGHT" --table all --predictor roofline --format csv
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -qx 'table,model,seq,batch,device,mode,option,predictor,measured_ms,predicted_ms,error_pct,paper_error_pct' && echo 0 || echo 1) \
  "CSV columns in the contract's order"
ok $(awk -F, 'NR > 1 && $1 == "inf"' "$TMP/out" | wc -l | grep -qx 54; echo $?) "54 inference rows"
ok $(awk -F, 'NR > 1 && $1 == "train"' "$TMP/out" | wc -l | grep -qx 26; echo $?) "26 training rows"
ok $(awk -F, 'NR > 1 { d = $11 - $12; if (d < 0) d = -d; if (d > 0.5) { print "off:", $0; bad = 1 } } END { exit bad }' "$TMP/out" >"$TMP/off"; echo $?) \
  "every row within 0.5 points of the paper's roofline error"
[ -s "$TMP/off" ] && diag "$(cat "$TMP/off")"
inf=$(awk -F, '$1 == "inf" { s += $11; n++ } END { printf "%.2f", s / n }' "$TMP/out")
train=$(awk -F, '$1 == "train" { s += $11; n++ } END { printf "%.2f", s / n }' "$TMP/out")
ok $(awk -v m="$inf" 'BEGIN { exit !(m >= 30.9 && m <= 31.5) }'; echo $?) "inference mean $inf = 31.2 +- 0.3"
ok $(awk -v m="$train" 'BEGIN { exit !(m >= 31.6 && m <= 32.2) }'; echo $?) "training mean $train = 31.9 +- 0.3"
ok $(grep -Eq '^roofline +inf +54 +31\.18 +31\.18$' "$TMP/err"; echo $?) "the summary (stderr with csv) gives ours and the paper's mean"

run_pm reproduce --neusight "$NEUSIGHT" --table train
ok $([ $rc -eq 0 ] && grep -Eq '^roofline +train +26 ' "$TMP/out" && ! grep -q '^inf ' "$TMP/out" && echo 0 || echo 1) \
  "--table train prints only training rows and its mean"
expect_fail 2 "--table 'bogus': expected inf, train, perop, distributed or all" "an unknown table is refused" -- reproduce --neusight "$NEUSIGHT" --table bogus

# The per-op table, the paper's way: per-class sums over each model run.
run_pm reproduce --neusight "$NEUSIGHT" --table perop --predictor roofline,linreg --format csv
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -qx 'predictor,class,split,rows,mape_pct,paper_mape_pct,paper_same_runs_pct' && echo 0 || echo 1) \
  "perop CSV columns"
ok $(awk -F, 'NR > 1 { n++; d = $5 - $7; if (d < 0) d = -d; if (d > 0.005) { print "off:", $0; bad = 1 } } END { exit bad || n != 20 }' "$TMP/out" >"$TMP/off"; echo $?) \
  "roofline and linreg per-op errors equal the artifact's own on the same runs (20 cells, within 0.005)"
[ -s "$TMP/off" ] && diag "$(cat "$TMP/off")"
ok $(awk -F, '$2 == "LN" { n++; d = $5 - $6; if (d < 0) d = -d; if (d > 0.01) bad = 1 } END { exit bad || n != 4 }' "$TMP/out"; echo $?) \
  "layer norm, measured on every run of the table, equals perop.csv itself"
ok $(awk -F, '$1 == "roofline" && ($2 == "BMM" || $2 == "FC" || $2 == "Softmax") { d = $5 - $6; if (d < 0) d = -d; if (d > 2) bad = 1 } END { exit bad }' "$TMP/out"; echo $?) \
  "roofline BMM, FC and softmax within 2 points of perop.csv"
ok $(awk -F, '$3 == "in" { if ($4 != 22) bad = 1 } $3 == "out" { if ($4 != 48) bad = 1 } END { exit bad }' "$TMP/out"; echo $?) \
  "22 in-distribution and 48 out-of-distribution runs have per-node labels"

# An imported graph carries its batch and sequence into --explain.
run_pm --gpu h100 --model "$NEUSIGHT/DLmodel_configs/gpt3_27.json" --opgraph "$NEUSIGHT/results/opgraph/gpt3_27-train-2048-1.csv" \
  --mode train --strategy tp=8,pp=4 --explain
ok $([ $rc -eq 0 ] && grep -q 'batch 1 x seq 2048' "$TMP/out" && grep -q 'e2e_ms *701.165$' "$TMP/out" && echo 0 || echo 1) \
  "imported GPT-3 2.7B training graph: batch and sequence from the trace, NeuSight's roofline e2e (701.165 ms)"
tm=$(awk 'BEGIN { printf "%.4f", 4*2048*2560*10240/(8*66.908e12)*1e3 }')
ok $(awk -v tm="$tm" '$1 == "tp" { exit !($4 == tm) }' "$TMP/out"; echo $?) "--explain tp t_math = 4BDF/(YC) = $tm ms"
finish
