#!/bin/sh
# t1130-recompute-modules.sh: Megatron-Core's --recompute-modules as recompute_modules=: the activations each module stops keeping and the forwards it runs again, by hand; its refusals; its launch flags.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 11

mem () {  # activations (GB of 10^9 bytes, from the GiB reported) and recompute_ms of a training step, one micro-batch
  run_pm --model "$1" --gpu h100 --mode train --dtype bf16 --batch 8 --seq 4096 --predictor roofline \
    --format json --strategy "dp=8,ep=8,kernels=te$2"
  jq -r '"\(.predictions[0].memory_gib.activations * 1073741824 / 1e9) \(.predictions[0].recompute_ms) \(.strategy.recompute) \(.strategy.recompute_modules)"' "$TMP/out"
}
near () { awk -v a="$1" -v b="$2" -v e="$3" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= e)}'; }

# Mixtral 8x7B, 4096 tokens a micro-batch on each GPU, bf16: layernorm drops the two norms'
# outputs (2 x 2 bytes x 4096 x 4096 a layer), moe_act the SwiGLU outputs of the top 2
# experts (2 x 4096 x 14336 x 2 bytes): 32 x (67108864 + 234881024) = 9663676416 bytes
set -- $(mem mixtral-8x7b "")
none=$1 none_rc=$2 none_sel=$4
set -- $(mem mixtral-8x7b ",recompute_modules=layernorm+moe_act")
ok $(near "$(awk -v a="$none" -v b="$1" 'BEGIN {printf "%.9f", a - b}')" 9.663676416 0.000001; echo $?) \
  "layernorm+moe_act: Mixtral keeps 9.663676416 GB less ($none -> $1)"
ok $([ "$3" = selective ] && [ "$4" = layernorm+moe_act ] && [ "$none_sel" = null ] &&
     [ "$none_rc" = 0 ]; echo $?) \
  "recompute_modules alone is selective recomputation, named in JSON (null without it)"
lm_rc=$2
# what runs again: the forwards of those nodes, as --per-op prints them (count x fw_ms)
run_pm --model mixtral-8x7b --gpu h100 --mode train --dtype bf16 --batch 8 --seq 4096 \
  --predictor roofline --per-op=0 --strategy dp=8,ep=8,kernels=te,recompute_modules=layernorm+moe_act
sum=$(awk '$1 ~ /^decoder_layers_0_(input_layernorm|pre_mlp_layernorm|experts_swiglu)$/ {s += $7 * $8}
           END {printf "%.6f", s}' "$TMP/out")
ok $(awk -v s="$sum" 'BEGIN {exit !(s > 0)}' && near "$lm_rc" "$sum" 0.0001; echo $?) \
  "the backward runs the norms' and the experts' activation forwards again ($lm_rc ms = $sum)"
# recompute=selective alone: the attention core, whose fused kernel keeps one fp32
# log-sum-exp a head and query row: 32 x 4 x 32 x 4096 = 16777216 bytes less
set -- $(mem mixtral-8x7b ",recompute=selective")
ok $([ "$4" = core_attn ] &&
     near "$(awk -v a="$none" -v b="$1" 'BEGIN {printf "%.9f", a - b}')" 0.016777216 0.000001
     echo $?) "recompute=selective alone is the attention core (0.016777216 GB less: $1 GB)"

# DeepSeek-V2-Lite (MLA, 16 heads, q/k 128 + 64 wide, v 128): mla_up_proj drops the expanded
# q, k and v, 16 x (2 x 192 + 128) values a token: 27 x 4096 x 8192 x 2 = 1811939328 bytes
set -- $(mem deepseek-v2-lite "")
v2=$1
set -- $(mem deepseek-v2-lite ",recompute_modules=mla_up_proj")
ok $(near "$(awk -v a="$v2" -v b="$1" 'BEGIN {printf "%.9f", a - b}')" 1.811939328 0.000001 &&
     awk -v r="$2" 'BEGIN {exit !(r > 0)}'; echo $?) \
  "mla_up_proj: DeepSeek-V2-Lite keeps 1.811939328 GB less and runs the up-projections again"

expect_one_line 2 'recompute_modules needs recompute=selective' "modules with full recomputation are refused" -- \
  --model mixtral-8x7b --gpu h100 --mode train --strategy dp=8,ep=8,recompute=full,recompute_modules=moe_act
expect_one_line 2 "'bogus' is not a module" "an unknown module is refused by name" -- \
  --model mixtral-8x7b --gpu h100 --mode train --strategy dp=8,ep=8,recompute_modules=moe_act+bogus
expect_one_line 2 'recompute_modules: needs multi-head latent attention' "mla_up_proj without MLA is refused" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 8 --strategy dp=8,ep=8,kernels=te,recompute_modules=mla_up_proj
expect_one_line 2 "recompute_modules: needs kernels=te" "modules outside Megatron-Core's layer are refused" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 8 --strategy dp=8,ep=8,kernels=eager,recompute_modules=layernorm

run_pm --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --predictor roofline \
  --strategy dp=8,ep=8,kernels=te,recompute_modules=layernorm+moe_act --print megatron
ok $(grep -q -- '--recompute-granularity selective --recompute-modules layernorm moe_act' "$TMP/out";
     echo $?) "--print megatron: --recompute-modules layernorm moe_act"
run_pm --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --predictor roofline \
  --strategy dp=8,ep=8,kernels=te,recompute_modules=layernorm+moe_act --print nemo
ok $(grep -q -- 'model.recompute_modules=\[layernorm,moe_act\]' "$TMP/out"; echo $?) \
  "--print nemo: model.recompute_modules=[layernorm,moe_act]"

finish
