#!/bin/sh
# t1120-moe-tp.sh: Megatron-Core's routed layer beside tensor and sequence parallelism, by hand: each rank routes and dispatches its own share of the sequence; the copies gathered over tp after dispatch (expert tp = tp) or experts whole (etp=1); what Megatron-Core refuses, refused; published-runs' keys column and FLOPs rule.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 16

# Mixtral 8x7B (hidden 4096, 8 experts, top 2, expert width 14336) on 8 H100: tp=2 with
# sequence parallelism, ep=4 over tp x dp, one micro-batch of 1024 tokens in bf16.  Each
# rank holds 1024 / 2 = 512 tokens at the routed layer.
perop () {
  run_pm --model mixtral-8x7b --gpu h100 --mode train --dtype bf16 --batch 8 --seq 1024 \
    --predictor roofline --per-op=0 --strategy "tp=2,ep=4,dp=4,sp=1,kernels=te$1"
}
row () { awk -v n="$1" '$1 == n {print $4; exit}' "$TMP/out"; }
rows () { awk -v n="$1" -v s="$2" '$1 == n && $4 == s' "$TMP/out" | wc -l; }

perop ""
# the router sees the rank's 512 tokens; ep's all-to-all sends their 2 copies:
# 512 x 2 x 4096 x 2 bytes = 8388608
ok $([ "$rc" -eq 0 ] && [ "$(row decoder_layers_0_router)" = 1x512x4096x8 ] &&
     [ "$(row decoder_layers_0_ep_alltoall_fw)" = 8.38861MB ]; echo $?) \
  "the router and ep's all-to-all take the rank's sequence share (512 tokens, 8388608 bytes)"
# expert tp = tp (Megatron-Core's default): the copies of all 1024 tokens gathered over tp
# after dispatch (1024 x 2 x 4096 x 2 = 16777216 bytes), scattered back before combine; the
# forward's gather and the backward's scatter at dispatch, the reverse at combine
ok $([ "$(rows decoder_layers_0_tp_allgather_fw 16.7772MB)" -eq 1 ] &&
     [ "$(rows decoder_layers_0_tp_reduce_scatter_fw 16.7772MB)" -eq 1 ] &&
     [ "$(rows decoder_layers_0_tp_reduce_scatter_bw 16.7772MB)" -eq 1 ] &&
     [ "$(rows decoder_layers_0_tp_allgather_bw 16.7772MB)" -eq 1 ]; echo $?) \
  "expert tp = tp: the routed copies (16777216 bytes) gathered and scattered over tp"
# no gather of the hidden states before the routed block: the attention block's one
# all-gather (1024 x 4096 x 2 = 8388608) and reduce-scatter forward, nothing more
ok $([ "$(rows decoder_layers_0_tp_allgather_fw 8.38861MB)" -eq 1 ] &&
     [ "$(rows decoder_layers_0_tp_reduce_scatter_fw 8.38861MB)" -eq 1 ]; echo $?) \
  "the routed block has no gather of its input over tp, the attention block's alone"
# each of the 2 local experts: 1024 tokens x 2 copies x 4 ep ranks / 8 experts = 1024
# tokens, fc1 of width 2 x 14336 / tp 2
ok $([ "$(row decoder_layers_0_experts_fc1)" = 1x1024x4096x14336 ]; echo $?) \
  "expert tp = tp: each expert's fc1 over 1024 tokens and half its width"

perop ",etp=1"
# whole experts (--expert-tensor-parallel-size 1): 512 tokens x 2 x 4 / 8 = 512 tokens an
# expert at full width 2 x 14336; nothing of the routed layer gathered over tp
ok $([ "$rc" -eq 0 ] && [ "$(row decoder_layers_0_experts_fc1)" = 1x512x4096x28672 ] &&
     [ "$(row decoder_layers_0_ep_alltoall_fw)" = 8.38861MB ] &&
     [ "$(rows decoder_layers_0_tp_allgather_fw 16.7772MB)" -eq 0 ]; echo $?) \
  "etp=1: whole experts over 512 tokens each, the same all-to-all, no gather of the copies"

# Megatron-Core's groups: with expert tp = tp, ep x tp ranks must fit a stage's tp x dp
expect_one_line 2 'ep=8 with tp=2: .*etp=1 keeps each expert whole' \
  "ep x tp beyond tp x dp is refused, naming etp=1" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 1024 --strategy tp=2,ep=8,dp=4,sp=1
run_pm --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 1024 --predictor roofline \
  --strategy tp=2,ep=8,dp=4,sp=1,etp=1 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.predictions[0].step_ms > 0 and .strategy.ep == 8 and
     .strategy.etp == 1' "$TMP/out" >/dev/null; echo $?) "the same with etp=1 is predicted, etp=1 in its JSON"
run_pm --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 1024 --predictor roofline \
  --strategy tp=2,ep=8,dp=4,sp=1,etp=1 --print megatron
ok $([ "$rc" -eq 0 ] && grep -q -- '--expert-tensor-parallel-size 1' "$TMP/out" &&
     grep -q -- '--expert-model-parallel-size 8' "$TMP/out"; echo $?) \
  "--print megatron writes etp=1 as --expert-tensor-parallel-size 1"

# published-runs: a bad strategy key names its file and line; megatron-core FLOPs
hdr=$(grep '^id,' "$top_srcdir/tests/published-runs.csv")
row_mix='x,mixtral-8x7b,h100-sxm,64,1,4,16,1,8,8,1,256,4096,bf16,none,0,tflops_per_gpu,468,,s,megatron-core,,,'
printf '%s\n%s%s,note\n' "$hdr" "$row_mix" "dispatcher=bogus" > "$TMP/bad.csv"
expect_one_line 2 "bad.csv:2: keys: .*dispatcher" "a bad key in published-runs names file:line" -- \
  reproduce --table published --published "$TMP/bad.csv" --predictor roofline
printf '%s\n%s%s,note\n' "$hdr" "$row_mix" "split=1:1" > "$TMP/bad.csv"
expect_one_line 2 "bad.csv:2: keys: split gives 2" "a split that does not fit pp x vp is refused at its line" -- \
  reproduce --table published --published "$TMP/bad.csv" --predictor roofline
printf '%s\n%s%s,note\n' "$hdr" "$row_mix" "ep=4" > "$TMP/bad.csv"
expect_one_line 2 "bad.csv:2: keys: ep=4: tp, pp, dp, cp, ep, vp and mbs are the row's columns" \
  "keys that change the row's parallel degrees are refused at its line" -- \
  reproduce --table published --published "$TMP/bad.csv" --predictor roofline
printf '%s\n%s%s,note\n' "$hdr" "$row_mix" "recompute_modules=moe_act" > "$TMP/bad.csv"
expect_one_line 2 "bad.csv:2: keys: recompute_modules=moe_act says recompute=selective, the row's column none" \
  "keys that contradict the row's recompute column are refused at its line" -- \
  reproduce --table published --published "$TMP/bad.csv" --predictor roofline
# Megatron-Core's count for Mixtral 8x7B: 12 B s l h^2 ((1 + 8/32 + 4096/4096) + 14336/4096
# x 2 x 3/2 + 32000 / (2 x 32 x 4096)) = 12 x 256 x 4096 x 32 x 4096^2 x 12.8722... =
# 8.6955e16 FLOPs a step; at 468 TFLOP/s on 64 GPUs: 2903.2 ms (the CSV's published_step_ms)
printf '%s\n%s,note\n' "$hdr" "$row_mix" > "$TMP/mix.csv"
run_pm reproduce --table published --published "$TMP/mix.csv" --predictor roofline --format csv
pub=$(awk -F, 'NR == 2 {print $16}' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ "$(head -1 "$TMP/out" | cut -d, -f16)" = published_step_ms ] &&
     awk -v p="$pub" 'BEGIN {exit !(p > 2902.5 && p < 2904.0)}'; echo $?) \
  "megatron-core FLOPs: Mixtral 8x7B at 468 TFLOP/s on 64 GPUs is 2903.2 ms a step (got $pub)"
printf '%s\n%s%s,note\n' "$hdr" "$(echo "$row_mix" | sed 's/megatron-core/megatron-cor/')" "" \
  > "$TMP/bad.csv"
expect_one_line 2 "bad.csv:2: flops 'megatron-cor'" "an unknown FLOPs rule names file:line" -- \
  reproduce --table published --published "$TMP/bad.csv" --predictor roofline
# every MoE row of the shipped file is predicted (none skipped, none refused)
run_pm reproduce --table published --predictor roofline --format csv
n=$(awk -F, '$2 ~ /^(gpt-oss-120b|qwen3-30b-a3b|qwen3-235b-a22b|deepseek-v3|mixtral-8x7b)$/' "$TMP/out" | wc -l)
ok $([ "$rc" -eq 0 ] && [ "$n" -ge 25 ] && ! grep -q '^skipped' "$TMP/err"; echo $?) \
  "the shipped MoE runs ($n) are all predicted"
# the summary's dense and MoE lines: as many runs as the rows of each, and the MoE median
# (to the CSV's rounding) and the count more than 20 % too fast those of its error_pct (a
# row printed -20.00 may be either side of -20)
awk -F, 'NR > 1 {moe = $2 ~ /^(gpt-oss-120b|qwen3-30b-a3b|qwen3-235b-a22b|deepseek-v3|mixtral-8x7b)$/
  print (moe ? "moe" : "dense"), ($18 < 0 ? -$18 : $18), ($18 < -20), ($18 <= -20)}' "$TMP/out" > "$TMP/e"
med=$(awk '$1 == "moe" {print $2}' "$TMP/e" | sort -g | awk '{v[NR] = $1}
  END {printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
fast=$(awk '$1 == "moe" {f += $3} END {print f}' "$TMP/e")
fast_hi=$(awk '$1 == "moe" {f += $4} END {print f}' "$TMP/e")
nd=$(awk '$1 == "dense"' "$TMP/e" | wc -l)
ok $(awk -v n="$n" -v nd="$nd" -v med="$med" -v lo="$fast" -v hi="$fast_hi" '
  $1 == "MoE" {m = ($2 == n && ($3 - med)^2 <= 0.06^2 && $NF >= lo && $NF <= hi)}
  $1 == "dense" {d = ($2 == nd)}
  END {exit !(m && d)}' "$TMP/err"; echo $?) \
  "the summary's MoE line: $n runs, median $med %, $fast to $fast_hi more than 20 % too fast, as the rows say"

finish
