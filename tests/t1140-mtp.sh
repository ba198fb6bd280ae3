#!/bin/sh
# t1140-mtp.sh: Megatron-Core's multi-token prediction layers (mtp=N) on the last stage, by hand: what they run, what they hold, what is refused, the launch flag.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 8

# memory in GB of 10^9 bytes below, from the GiB perfmod reports
one () {  # Mixtral 8x7B on one H100, one sequence of 4096 tokens, roofline
  run_pm --model mixtral-8x7b --gpu h100 --mode train --dtype bf16 --batch 1 --seq 4096 \
    --predictor roofline "$@"
}
# host_us=0: the kernels' times alone (the host's launches are t1230's)
one --format json --strategy "tp=1,kernels=te,host_us=0"
set -- $(jq -r '"\(.predictions[0].pipeline_ms) \(.predictions[0].memory_gib.weights * 1073741824 / 1e9)"' "$TMP/out")
pipe0=$1 w0=$2
one --format json --strategy "tp=1,kernels=te,mtp=1,host_us=0"
set -- $(jq -r '"\(.predictions[0].pipeline_ms) \(.predictions[0].memory_gib.weights * 1073741824 / 1e9) \(.strategy.mtp)"' "$TMP/out")
pipe1=$1 w1=$2
ok $([ "$3" = 1 ] && [ "$rc" -eq 0 ]; echo $?) "mtp=1 is predicted and named in JSON's strategy"
# one more layer's weights (attention 41943040, router 32768, 8 experts x 3 x 4096 x 14336,
# norms 8192: 1451270144) and eh_proj's 2 x 4096 x 4096 and the two norms' 2 x 4096, in
# 2 bytes: 2969665536 (the final norm's 1/32 share, 128 parameters, within the tolerance)
ok $(awk -v a="$w1" -v b="$w0" 'BEGIN {d = a - b - 2.969665536; exit !(d < 0.000001 && d > -0.000001)}'
     echo $?) "mtp=1 holds one layer and eh_proj more: 2.969665536 GB of weights ($w0 -> $w1)"
# what it keeps: one more layer's activations (those of a 33rd layer) and its head's fp32
# logits, 4 bytes x 4096 tokens x 32000 = 524288000 bytes
one --format json --strategy "tp=1,kernels=te"
a0=$(jq -r '.predictions[0].memory_gib.activations * 1073741824 / 1e9' "$TMP/out")
one --format json --strategy "tp=1,kernels=te,mtp=1"
a1=$(jq -r '.predictions[0].memory_gib.activations * 1073741824 / 1e9' "$TMP/out")
one --format json --strategy "tp=1,kernels=te" --layers 33
a33=$(jq -r '.predictions[0].memory_gib.activations * 1073741824 / 1e9' "$TMP/out")
ok $(awk -v a0="$a0" -v a1="$a1" -v a33="$a33" 'BEGIN {d = (a1 - a0) - (a33 - a0) - 0.524288000
     exit !(d < 0.000001 && d > -0.000001)}'; echo $?) \
  "mtp=1 keeps a layer's activations and its logits more ($a0 -> $a1 GB; a 33rd layer $a33)"
# what it runs: the MTP nodes of --per-op, their forward, backward and accumulation
one --per-op=0 --strategy "tp=1,kernels=te,mtp=1,host_us=0"
sum=$(awk '$1 ~ /^mtp_layers_0_/ {s += $7 * ($8 + $9 + $10)} END {printf "%.6f", s}' "$TMP/out")
ok $(awk -v a="$pipe1" -v b="$pipe0" -v s="$sum" 'BEGIN {d = a - b - s; exit !(s > 0 && d < 0.0001 && d > -0.0001)}'
     echo $?) "the step grows by the MTP nodes' times ($pipe0 -> $pipe1 ms, nodes $sum ms)"
# the tokens one further on embedded, both normed, concatenated, projected 2 x 4096 -> 4096;
# then a routed layer and the output layer over the vocabulary
ok $([ "$(awk '$1 == "mtp_layers_0_eh_proj" {print $4}' "$TMP/out")" = 1x4096x8192x4096 ] &&
     grep -q '^mtp_layers_0_embedding ' "$TMP/out" && grep -q '^mtp_layers_0_router ' "$TMP/out" &&
     [ "$(awk '$1 == "mtp_layers_0_output_layer" {print $4}' "$TMP/out")" = 1x4096x4096x32000 ]
     echo $?) "the MTP layer: embedding, eh_proj 8192 -> 4096, a routed layer, the output layer"

expect_one_line 2 'mtp=1: multi-token prediction layers need kernels=te' "mtp outside Megatron-Core's layer is refused" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 1 --strategy tp=1,kernels=eager,mtp=1
expect_one_line 2 'mtp=17: expected 0 to 16' "mtp beyond 16 is refused" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 1 --strategy tp=1,mtp=17
run_pm --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --predictor roofline \
  --strategy dp=8,ep=8,kernels=te,mtp=1 --print megatron
ok $(grep -q -- '--mtp-num-layers 1' "$TMP/out"; echo $?) "--print megatron: --mtp-num-layers 1"

finish
