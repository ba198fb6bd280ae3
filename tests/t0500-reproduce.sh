#!/bin/sh
# t0500-reproduce.sh: perfmod reproduce gives the paper's roofline means and every row within 0.5 points.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
neusight_or_skip
plan 25

run_pm reproduce --neusight "$NEUSIGHT" --table all --predictor roofline --format csv
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -qx 'table,model,seq,batch,device,mode,option,predictor,measured_ms,predicted_ms,error_pct,paper_error_pct' && echo 0 || echo 1) \
  "CSV columns in the contract's order"
ok $(awk -F, 'NR > 1 && $1 == "inf"' "$TMP/out" | wc -l | grep -qx 54; echo $?) "54 inference rows"
ok $(awk -F, 'NR > 1 && $1 == "train"' "$TMP/out" | wc -l | grep -qx 26; echo $?) "26 training rows"
ok $(awk -F, 'NR > 1 { n++; d = $11 - $12; if (d < 0) d = -d; if (d > 0.5) { print "off:", $0; bad = 1 } } END { exit bad || n != 80 }' "$TMP/out" >"$TMP/off"; echo $?) \
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
expect_fail 2 "--table 'bogus': expected inf, train, perop, nodesum, distributed, all, published, collectives or serving" "an unknown table is refused" -- reproduce --neusight "$NEUSIGHT" --table bogus

for t in inf distributed; do
  expect_fail 2 "--predictor 'nope': no such predictor plugin" "--table $t: an unknown predictor is refused, naming it" -- \
    reproduce --neusight "$NEUSIGHT" --table $t --predictor roofline,nope
done

# The per-op table, the paper's way: per-class sums over each model run.
run_pm reproduce --neusight "$NEUSIGHT" --table perop --predictor roofline,linreg --format csv
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -qx 'predictor,class,split,rows,mape_pct,paper_mape_pct,paper_same_runs_pct' && echo 0 || echo 1) \
  "perop CSV columns"
ok $(awk -F, 'NR > 1 { n++; d = $5 - $7; if (d < 0) d = -d; if (d > 0.005) { print "off:", $0; bad = 1 } } END { exit bad || n != 20 }' "$TMP/out" >"$TMP/off"; echo $?) \
  "roofline and linreg per-op errors equal the artifact's own on the same runs (20 cells, within 0.005)"
[ -s "$TMP/off" ] && diag "$(cat "$TMP/off")"
ok $(awk -F, '$2 == "LN" { n++; d = $5 - $6; if (d < 0) d = -d; if (d > 0.01) bad = 1 } END { exit bad || n != 4 }' "$TMP/out"; echo $?) \
  "layer norm, measured on every run of the table, equals perop.csv itself"
ok $(awk -F, '$1 == "roofline" && ($2 == "BMM" || $2 == "FC" || $2 == "Softmax") { n++; d = $5 - $6; if (d < 0) d = -d; if (d > 2) bad = 1 } END { exit bad || n == 0 }' "$TMP/out"; echo $?) \
  "roofline BMM, FC and softmax within 2 points of perop.csv"
ok $(awk -F, '$3 == "in" { i++; if ($4 != 22) bad = 1 } $3 == "out" { o++; if ($4 != 48) bad = 1 } END { exit bad || !i || !o }' "$TMP/out"; echo $?) \
  "22 in-distribution and 48 out-of-distribution runs have per-node labels"

# --table nodesum: the end-to-end rows with per-node labels, and the sum
# of those labels.  On the artifact: 48 inference and 22 training runs.
run_pm reproduce --neusight "$NEUSIGHT" --table nodesum --predictor roofline --format csv
ok $([ $rc -eq 0 ] && awk -F, '$8 == "node-sum" { n[$1]++ } $8 == "roofline" { r[$1]++ }
  END { exit !(n["inf"] == 48 && n["train"] == 22 && r["inf"] == 48 && r["train"] == 22) }' "$TMP/out" &&
  echo 0 || echo 1) "nodesum: 48 inference and 22 training runs, a node-sum and a roofline row each"

# A NeuSight tree of one labelled run (GPT-2 Large, 36 layers) and one
# unlabelled: a label of 1 ms on a node of the traced layer counts 36
# times, 2 ms on the LM head once, and a label no node has not at all.
ns=$TMP/ns
dev=Tesla_V100-PCIE-32GB tag=gpt2_large-inf-1024-4
mkdir -p "$ns/summary" "$ns/DLmodel_configs" "$ns/results/opgraph" "$ns/label/$dev" \
  "$ns/label/Tesla_P100-PCIE-16GB"
printf 'model_name,seqlen,batch,device,mode,option\ngpt2_large,1024,4,%s,inf,\ngpt2_large,1024,4,Tesla_P100-PCIE-16GB,inf,\n' \
  "$dev" >"$ns/summary/summary.csv"
cp "$NEUSIGHT/DLmodel_configs/gpt2_large.json" "$ns/DLmodel_configs/"
cp "$NEUSIGHT/results/opgraph/$tag.csv" "$ns/results/opgraph/"
echo '{"e2e_latency": 100}' >"$ns/label/$dev/$tag.json"
echo '{"e2e_latency": 100}' >"$ns/label/Tesla_P100-PCIE-16GB/$tag.json"
printf 'Name,latency\ntransformer_h_0_mlp_dropout,1\nlm_head,2\nno_such_node,50\n' >"$ns/label/$dev/$tag.csv"
run_pm reproduce --neusight "$ns" --table nodesum --predictor roofline --format csv
ok $([ $rc -eq 0 ] && grep -qx "inf,gpt2_large,1024,4,$dev,inf,,node-sum,100.000000,38.000000,62.000000," "$TMP/out" &&
  [ "$(grep -c ,node-sum, "$TMP/out")" -eq 1 ] && echo 0 || echo 1) \
  "nodesum: labels joined by node name, the layer's repeated 36 times (36 + 2 = 38 ms against 100), the unlabelled run left out"
ok $(grep -Eq '^node-sum +inf +1 +62\.00 +-$' "$TMP/err"; echo $?) "nodesum: the summary has a node-sum line"
run_pm reproduce --neusight "$ns" --table inf --predictor roofline --format csv
ok $([ $rc -eq 0 ] && [ "$(grep -c ',roofline,' "$TMP/out")" -eq 2 ] && ! grep -q node-sum "$TMP/out" && echo 0 || echo 1) \
  "--table inf keeps the unlabelled run and prints no node-sum row"
expect_fail 2 "--table nodesum needs NeuSight's traced graphs" "nodesum on built graphs is refused" -- \
  reproduce --neusight "$ns" --table nodesum --graph builder

# Bad data: an error naming file:line, exit 1 and no half-written table.
printf 'Name,latency\ntransformer_h_0_mlp_dropout,1\nlm_head,fast\n' >"$ns/label/$dev/$tag.csv"
expect_fail 1 "label/$dev/$tag.csv:3: no numeric latency" "a non-numeric per-node label: file:line, nothing on stdout" -- \
  reproduce --neusight "$ns" --table nodesum --predictor roofline
printf 'model_name,seqlen,batch,device,mode,option\ngpt2_large,1024,4,Tesla_P100-PCIE-16GB,inf,\ngpt2_large,1024,4,%s,decode,\n' \
  "$dev" >"$ns/summary/summary.csv"
expect_fail 1 "summary/summary.csv:3: mode 'decode': expected inf or train" \
  "an unknown mode after a good row: file:line, and the good row is not printed" -- \
  reproduce --neusight "$ns" --table all --predictor roofline --format csv

# An imported graph carries its batch and sequence into --explain.
run_pm --gpu h100 --model "$NEUSIGHT/DLmodel_configs/gpt3_27.json" --opgraph "$NEUSIGHT/results/opgraph/gpt3_27-train-2048-1.csv" \
  --mode train --strategy tp=8,pp=4 --explain --predictor roofline --plugin-opt roofline:units=neusight
ok $([ $rc -eq 0 ] && grep -q 'batch 1 x seq 2048' "$TMP/out" && grep -q 'e2e_ms *701.165$' "$TMP/out" && echo 0 || echo 1) \
  "imported GPT-3 2.7B training graph: batch and sequence from the trace, NeuSight's roofline e2e (701.165 ms)"
tm=$(awk 'BEGIN { printf "%.4f", 4*2048*2560*10240/(8*66.908e12)*1e3 }')
ok $(awk -v tm="$tm" '$1 == "tp" { f = 1; exit !($4 == tm) } END { if (!f) exit 1 }' "$TMP/out"; echo $?) "--explain tp t_math = 4BDF/(YC) = $tm ms"
finish
