#!/bin/sh
# t1100-dispatcher.sh: how ep's tokens reach their experts in a graph (dispatcher=alltoall, allgather, flex: DeepEP's kernels) and a2a_overlap, each by hand; what Megatron-Core refuses, refused.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 32

# Mixtral 8x7B on 8 H100 of one node, ep=8 over the data-parallel ranks, one micro-batch of
# 4096 tokens, roofline, Megatron-Core's layer: 32 routed layers, each dispatching and
# combining forward and backward.
train () {
  run_pm --model mixtral-8x7b --gpu h100 --mode train --batch "${B:-8}" --seq 4096 --format json \
    --predictor roofline --strategy "tp=1,pp=1,dp=8,ep=8,kernels=te$1"
}
field () { jq -r "$1" "$TMP/out"; }

train ""
a2a_ep=$(field '.predictions[0].comm_ms.ep') a2a_step=$(field '.predictions[0].step_ms')
ok $([ "$rc" -eq 0 ] && [ "$(field '.strategy.dispatcher')" = alltoall ] &&
     [ "$(field '.strategy.a2a_overlap')" = false ]; echo $?) \
  "the strategy's dispatcher and a2a_overlap in JSON, all-to-all and off by default"

# DeepEP's normal kernels in bf16 (Megatron-Core's flex dispatcher): 8 experts over 8 ranks,
# top 2: another rank holds one of a token's experts with chance 1 - 7/8 x 6/7 = 1/4, so each
# kernel sends 4096 tokens x 7 ranks x 1/4 x 4096 x 2 bytes over NVLink, at the slower of the
# link's 450 x 0.8 GB/s and 20 SMs at 7.5 bytes a clock of 1980 MHz; plus its fixed cost:
# dispatch 26 us, combine 39 us.  The backward runs a combine for the dispatch and a
# dispatch for the combine: per layer 2 x (26 + 39) us + 4 kernels' transfers.
train ",dispatcher=flex"
flex_ep=$(field '.predictions[0].comm_ms.ep')
link=$(gpu_key NVIDIA_H100_80GB_HBM3 link_gbps) clock=$(gpu_key NVIDIA_H100_80GB_HBM3 clock_mhz)
eff=$(gpu_key defaults link_efficiency)
ok $([ "$rc" -eq 0 ] && [ "$(field '.strategy.dispatcher')" = flex ] &&
     awk -v got="$flex_ep" -v l="$link" -v e="$eff" -v c="$clock" 'BEGIN {
       bw = l * e * 1e9; sm = 20 * 7.5 * c * 1e6; if (sm < bw) bw = sm
       x = 4096 * 7 * 0.25 * 4096 * 2 / bw
       want = 32 * (2 * (26e-6 + 39e-6) + 4 * x) * 1e3
       exit !((got / want - 1)^2 < 1e-10) }'; echo $?) \
  "dispatcher=flex: DeepEP's normal kernels per layer, by hand ($flex_ep ms of ep, all-to-all $a2a_ep)"

# The all-gather dispatcher gathers every rank's 4096 tokens (8 x 4096 x 4096 x 2 bytes) and
# reduce-scatters the outputs, the backward the reverse: per layer 2 x (all-gather +
# reduce-scatter) of that buffer, NCCL's model as perfmod kernel gives it uncorrected.
train ",dispatcher=allgather"
ag_ep=$(field '.predictions[0].comm_ms.ep')
coll () {
  "$PERFMOD" kernel --op collective --coll "$1" --ranks 8 --bytes 268435456 --gpu h100-sxm \
    --predictor tile-mlp --plugin-opt tile-mlp:comm_params=none --format csv | awk -F, 'NR == 2 { print $5 }'
}
ag=$(coll all_gather) rs=$(coll reduce_scatter)
ok $([ "$rc" -eq 0 ] && awk -v got="$ag_ep" -v a="$ag" -v r="$rs" 'BEGIN {
       exit !(a > 0 && r > 0 && (got / (32 * 2 * (a + r)) - 1)^2 < 1e-10) }'; echo $?) \
  "dispatcher=allgather: an all-gather and a reduce-scatter of every rank's tokens a pass ($ag_ep ms)"

# a2a_overlap hides dispatch and combine behind another micro-batch's computation: with
# one micro-batch a replica nothing changes; with two, the same ep time, all of it hidden
# (the computation is longer), less the SMs NCCL's all-to-all holds meanwhile (16 of
# H100's 132): the step shortens by 116/132 of the ep time.
train ",a2a_overlap=1"
one_step=$(field '.predictions[0].step_ms')
B=16 train ""
two_step=$(field '.predictions[0].step_ms')
B=16 train ",a2a_overlap=1"
ov_step=$(field '.predictions[0].step_ms') ov_ep=$(field '.predictions[0].comm_ms.ep')
ok $([ "$rc" -eq 0 ] && [ "$(field '.strategy.a2a_overlap')" = true ] &&
     awk -v s1="$one_step" -v s="$ov_step" -v s0="$two_step" -v e="$ov_ep" -v a="$a2a_step" 'BEGIN {
       exit !(s1 == a && ((s0 - s) / (e * 116 / 132) - 1)^2 < 1e-10) }'; echo $?) \
  "a2a_overlap=1: nothing with one micro-batch; with two the all-to-alls hidden but for the SMs they hold ($two_step -> $ov_step ms of $ov_ep ms)"
# DeepEP's kernels (dispatcher=flex) hold their 20 SMs: the step shortens by 112/132 of ep's time
B=16 train ",dispatcher=flex"
fx_step=$(field '.predictions[0].step_ms')
B=16 train ",dispatcher=flex,a2a_overlap=1"
fxov_step=$(field '.predictions[0].step_ms') fx_ep=$(field '.predictions[0].comm_ms.ep')
ok $([ "$rc" -eq 0 ] && awk -v s0="$fx_step" -v s="$fxov_step" -v e="$fx_ep" 'BEGIN {
       exit !(e > 0 && ((s0 - s) / (e * 112 / 132) - 1)^2 < 1e-10) }'; echo $?) \
  "a2a_overlap=1 with DeepEP: hidden but for its 20 SMs ($fx_step -> $fxov_step ms of $fx_ep ms)"

# Megatron-Core's checks for --overlap-moe-expert-parallel-comm
for bad in "ep=1:tp=1,pp=1,dp=8,ep=1,kernels=te,a2a_overlap=1:ep>1" \
           "allgather:tp=1,pp=1,dp=8,ep=8,kernels=te,dispatcher=allgather,a2a_overlap=1:dispatcher=alltoall or flex" \
           "pp without vp:tp=1,pp=2,dp=4,ep=4,kernels=te,a2a_overlap=1:vp>1 when pp>1" \
           "full recomputation:tp=1,pp=1,dp=8,ep=8,kernels=te,recompute=full,a2a_overlap=1:recompute other than full"; do
  what=${bad%%:*} rest=${bad#*:}
  expect_one_line 2 "a2a_overlap=1: expert-parallel communication overlap needs ${rest#*:}" \
    "a2a_overlap=1 with $what: refused, naming what it needs" -- \
    --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --strategy "${rest%%:*}"
done
# a dispatcher needs tokens to dispatch, and DeepEP 16-bit ones
for bad in "a dense model:--model llama3.1-8b --strategy tp=1,dp=8,ep=1,dispatcher=flex:a model with routed experts" \
           "ep=1:--model mixtral-8x7b --strategy tp=8,dp=1,ep=1,dispatcher=allgather:ep>1" \
           "fp32 activations:--model mixtral-8x7b --precision fp32 --strategy tp=1,dp=8,ep=8,dispatcher=flex:16-bit activations"; do
  what=${bad%%:*} rest=${bad#*:}
  # shellcheck disable=SC2086
  expect_one_line 2 "dispatcher=[a-z]*: needs ${rest#*:}" "a dispatcher with $what: refused, naming what it needs" -- \
    ${rest%%:*} --gpu h100 --mode train --batch 8 --seq 4096
done
expect_one_line 2 "dispatcher=deepep: expected alltoall, allgather or flex" \
  "dispatcher=deepep: refused, naming the values" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --strategy tp=1,dp=8,ep=8,dispatcher=deepep

# Serving with attention over 8 replicas and the experts over their GPUs (SGLang's wide
# expert parallelism): a decode step of 64 sequences a GPU runs DeepEP's low-latency kernels,
# a copy per routed expert, 7/8 of them over NVLink; the dispatch in fp8 with a float scale
# per 128 values, the combine in bf16, each 12 us more.  Qwen3-30B-A3B: 48 layers, 2048 wide,
# top 8.
run_pm --model qwen3-30b-a3b --gpu h100 --dtype fp8 --engine --gen 16 --batch 512 --seq 512 \
  --strategy tp=1,ep=8,dp=8,dispatcher=flex --format json
tpot_comm=$(jq -r '.predictions[0].tpot_comm_ms' "$TMP/out")
ok $([ "$rc" -eq 0 ] && awk -v got="$tpot_comm" -v l="$link" -v e="$eff" 'BEGIN {
       b = 64 * 8 * 7 / 8 * 2048; bw = l * e * 1e9
       want = 48 * (12e-6 + b * (1 + 4 / 128) / bw + 12e-6 + b * 2 / bw) * 1e3
       exit !((got / want - 1)^2 < 1e-10) }'; echo $?) \
  "serving dispatcher=flex: a decode step's low-latency dispatch and combine, by hand ($tpot_comm ms)"
expect_one_line 2 "a2a_overlap=1: expert-parallel communication overlap needs a training step" \
  "inference with a2a_overlap: refused (a training schedule's)" -- \
  --model qwen3-30b-a3b --gpu h100 --gen 16 --batch 512 --seq 512 --strategy tp=1,ep=8,dp=8,a2a_overlap=1

# shared_overlap=1 (Megatron-Core's --moe-shared-expert-overlap): the shared experts run
# beside dispatch and combine; per phase the shorter of the two hides.  DeepSeek-V2-Lite,
# 26 routed layers with two shared experts, one micro-batch: min(ep's forward, the shared
# experts' forward) + the same of the backwards hides, each the --per-op rows times their
# count, and the step shortens by 116/132 of it (NCCL's all-to-all holds 16 of the SMs).
DS="--model deepseek-v2-lite --gpu h100 --mode train --batch 8 --seq 4096 --predictor roofline"
run_pm $DS --strategy tp=1,dp=8,ep=8,kernels=te --per-op --format csv
parts=$(awk -F, '$4 ~ /_ep_/ { cf += $10 * $11; cb += $10 * $12 } $4 ~ /_shared_experts_/ { sf += $10 * $11; sb += $10 * $12 }
              END { printf "%.9g %.9g %.9g %.9g", cf, cb, sf, sb }' "$TMP/out")
run_pm $DS --strategy tp=1,dp=8,ep=8,kernels=te --format json
s0=$(jq -r '.predictions[0].step_ms' "$TMP/out")
run_pm $DS --strategy tp=1,dp=8,ep=8,kernels=te,shared_overlap=1 --format json
s1=$(jq -r '.predictions[0].step_ms' "$TMP/out") h=$(jq -r '.predictions[0].overlapped_ms.ep' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ "$(jq -r '.strategy.shared_overlap' "$TMP/out")" = true ] &&
     echo "$parts" | awk -v s0="$s0" -v s1="$s1" -v h="$h" '{ m = ($1 < $3 ? $1 : $3) + ($2 < $4 ? $2 : $4)
       exit !(m > 0 && ((s0 - s1) / (m * 116 / 132) - 1)^2 < 1e-10 && (h / m - 1)^2 < 1e-10) }'; echo $?) \
  "shared_overlap=1: per phase the shorter of ep's collectives and the shared experts hides, less the SMs they hold, by hand ($s0 -> $s1 ms)"
expect_one_line 2 "shared_overlap=1: the shared experts' overlap needs a model with shared experts" \
  "shared_overlap=1 on Mixtral (no shared experts): refused" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --strategy tp=1,dp=8,ep=8,kernels=te,shared_overlap=1

# perfmod search --fix dispatcher=flex,a2a_overlap=1: every layout it keeps has them, and ep > 1
expect_one_line 2 "--fix: a2a_overlap=1 with dispatcher=allgather" \
  "search --fix of the all-gather dispatcher with a2a_overlap: refused before searching" -- \
  search --model mixtral-8x7b --gpu h100 --gpus 16 --global-batch 64 --fix dispatcher=allgather,a2a_overlap=1
run_pm search --model mixtral-8x7b --gpu h100 --gpus 16 --global-batch 64 --seq 4096 \
  --fix kernels=te,dispatcher=flex,a2a_overlap=1 --top 5 --format json
ok $([ "$rc" -eq 0 ] && jq -e '(.best | length) > 0 and all(.best[]; .strategy.dispatcher == "flex"
       and .strategy.a2a_overlap and .strategy.ep > 1 and (.strategy.spec | test("dispatcher=flex")))' \
       "$TMP/out" >/dev/null; echo $?) "search --fix dispatcher=flex,a2a_overlap=1: every layout has them, with ep > 1"
# Unless --fix gives them, search tries every way Megatron-Core moves ep's tokens, each with
# no overlap and with one where it runs (none not where the shared experts' runs: that one
# costs no memory): Mixtral (no shared experts, pp=1) on 32 GPUs (each expert's state over
# its 4 replicas) with bf16 gradients, at 2048 tokens the all-to-all and flex dispatchers
# with and without a2a_overlap, and the all-gather one (5); at 4096 a2a_overlap's extra
# micro-batch does not fit (3, 2 out of memory); no flex on L40S (PCIe, no NVLink: 3 out of
# memory); DeepSeek-V2-Lite over two stages without vp (no a2a_overlap) with its shared
# experts' overlap instead (3); both overlaps fixed off: none (3)
moe_choices () {
  run_pm search --model "$1" --gpu "$2" --gpus 32 --global-batch 64 --seq "${S:-4096}" --predictor roofline \
    --fix "tp=1,$3,cp=1,ep=8,mbs=1,zero=1,recompute=none,kernels=te,grad_fp32=0" --top 10 --format json
  [ "$rc" -eq 0 ] && jq -r '.predicted, (.best[].strategy | "\(.dispatcher):\(.a2a_overlap):\(.shared_overlap)")' \
    "$TMP/out" | sort | tr '\n' ' '
}
got=$(S=2048 moe_choices mixtral-8x7b h100 pp=1)
ok $([ "$got" = "5 allgather:false:false alltoall:false:false alltoall:true:false flex:false:false flex:true:false " ]
     echo $?) "search: Mixtral's dispatchers, with and without a2a_overlap for the all-to-all and flex ones ($got)"
got=$(moe_choices mixtral-8x7b h100 pp=1)
ok $([ "$got" = "3 allgather:false:false alltoall:false:false flex:false:false " ] &&
     [ "$(jq '.pruned.memory' "$TMP/out")" = 2 ]; echo $?) \
  "search at 4096 tokens: a2a_overlap's extra micro-batch out of memory, none kept ($got)"
got=$(moe_choices mixtral-8x7b l40s pp=1)
ok $([ "$got" = "0 " ] && [ "$(jq '.pruned.memory' "$TMP/out")" = 3 ]; echo $?) \
  "search: no DeepEP on GPUs without NVLink (alltoall with and without a2a_overlap, allgather: all out of memory: $got)"
got=$(moe_choices deepseek-v2-lite h100 pp=2,vp=1,schedule=1f1b)
ok $([ "$got" = "3 allgather:false:false alltoall:false:true flex:false:true " ]; echo $?) \
  "search: shared experts' overlap tried, a2a_overlap not where pp > 1 without vp ($got)"
got=$(moe_choices deepseek-v2-lite h100 pp=1,a2a_overlap=0,shared_overlap=0)
ok $([ "$got" = "3 allgather:false:false alltoall:false:false flex:false:false " ]; echo $?) \
  "search --fix a2a_overlap=0,shared_overlap=0: no overlap, each dispatcher ($got)"
# DeepEP's buffers (Megatron-Core's get_buffer, DeepEP's size hints, 20 SMs: 10 channels):
# Mixtral on one node of 8, hidden 4096 at 2 bytes: 10 x 8 x ((2 + 3) x 4 + 256 x (8192 + 8 +
# 1024 + 512 + 512)) = 209880640 NVLink bytes; Qwen3-30B-A3B over 16 ranks on two nodes,
# hidden 2048: 10 x 8 x (7 x 4 + 288 x 6152) = 141744320 NVLink and 10 x 2 x (18 x 2 x 4 +
# 128 x 2 x (6152 + 16)) = 31583040 RDMA bytes; each with the 33554432-byte workspace
act () {
  run_pm --model "$1" --gpu h100 --mode train --batch "$2" --seq 4096 --predictor roofline \
    --format json --strategy "$3"
  jq -r '.predictions[0].memory_gib.activations * 1073741824 / 1e9' "$TMP/out"
}
mix=$(awk -v a="$(act mixtral-8x7b 8 dp=8,ep=8,dispatcher=flex)" \
          -v b="$(act mixtral-8x7b 8 dp=8,ep=8)" 'BEGIN {printf "%.9f", a - b}')
qw=$(awk -v a="$(act qwen3-30b-a3b 16 dp=16,ep=16,dispatcher=flex)" \
         -v b="$(act qwen3-30b-a3b 16 dp=16,ep=16)" 'BEGIN {printf "%.9f", a - b}')
ok $(awk -v m="$mix" -v q="$qw" 'BEGIN {exit !((m - 0.243435072)^2 < 1e-12 && (q - 0.206881792)^2 < 1e-12)}'
     echo $?) "DeepEP's buffers: 0.243435072 GB a rank on one node of 8, 0.206881792 over 16 ($mix, $qw)"

# a2a_overlap's extra micro-batch (Megatron-Core's combined 1F1B runs one more forward before
# its 1F1B steps): Mixtral's layer at 2 and 4 layers, mbs=1, 4096 tokens; a layer's
# activations a = (A4 - A2) / 2 are held once more without pipelining, once more with
# pp=2 x vp=2 (a chunk of one layer), not at all with one micro-batch (nothing beside it)
jq '.num_hidden_layers = 2' "$top_srcdir/models/mixtral-8x7b.json" >"$TMP/mx2.json"
jq '.num_hidden_layers = 4' "$top_srcdir/models/mixtral-8x7b.json" >"$TMP/mx4.json"
P1=tp=1,pp=1,dp=8,ep=8,mbs=1,kernels=te
a2=$(act "$TMP/mx2.json" 16 $P1) a4=$(act "$TMP/mx4.json" 16 $P1)
o2=$(act "$TMP/mx2.json" 16 $P1,a2a_overlap=1) o4=$(act "$TMP/mx4.json" 16 $P1,a2a_overlap=1)
ok $(awk -v a2="$a2" -v a4="$a4" -v o2="$o2" -v o4="$o4" \
       'BEGIN { a = (a4 - a2) / 2; exit !(a > 0 && ((o4 - o2) / 2 / a - 2)^2 < 1e-12 && ((o4 - a4) / a - 4)^2 < 1e-12) }'
     echo $?) "a2a_overlap without pipelining: each layer's activations held twice ($a2, $a4 -> $o2, $o4 GB)"
one=$(act "$TMP/mx4.json" 8 $P1) one_o=$(act "$TMP/mx4.json" 8 $P1,a2a_overlap=1)
ok $(awk -v a="$one" -v b="$one_o" -v a4="$a4" 'BEGIN { exit !(a > 0 && a == b && a == a4 + 0) }'; echo $?) \
  "a2a_overlap with one micro-batch: no more activations ($one GB, as at 16 sequences without it)"
PV=tp=1,pp=2,dp=8,ep=8,mbs=1,vp=2,schedule=interleaved,kernels=te
run_pm --model "$TMP/mx4.json" --gpu h100 --mode train --batch 64 --seq 4096 --nodes 2 --predictor roofline \
  --format json --strategy $PV
i0=$(jq -r '.predictions[0].memory_gib.activations * 1073741824 / 1e9' "$TMP/out")
run_pm --model "$TMP/mx4.json" --gpu h100 --mode train --batch 64 --seq 4096 --nodes 2 --predictor roofline \
  --format json --strategy $PV,a2a_overlap=1
i1=$(jq -r '.predictions[0].memory_gib.activations * 1073741824 / 1e9' "$TMP/out")
ok $(awk -v a2="$a2" -v a4="$a4" -v i0="$i0" -v i1="$i1" \
       'BEGIN { a = (a4 - a2) / 2; exit !(((i1 - i0) / a - 1)^2 < 1e-12) }'
     echo $?) "a2a_overlap with pp=2 x vp=2: one more chunk of one layer in flight ($i0 -> $i1 GB)"

# Megatron-Core's expert ranks (parallel_state's expert rank generator, order tp-ep-dp): ep's
# neighbours are etp apart. Qwen3-30B-A3B, tp=2, ep=8 on two nodes of 8: with etp=1 the group
# is 8 neighbouring ranks, one node, so its all-to-alls cost what they cost in one node of 16;
# with the default expert tp (= tp) every other rank, across both nodes
epc () {
  run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --nodes "$1" \
    --gpus-per-node "$2" --predictor roofline --strategy "${4:-tp=2,dp=8,ep=8,sp=1,kernels=te}${3:-}" \
    --format json
  jq -r '.predictions[0].comm_ms.ep' "$TMP/out"
}
w8=$(epc 2 8 ,etp=1) w16=$(epc 1 16 ,etp=1) d8=$(epc 2 8) d16=$(epc 1 16)
ok $(awk -v a="$w8" -v b="$w16" -v c="$d8" -v d="$d16" 'BEGIN { exit !(a > 0 && a == b && c > d && d == b) }'
     echo $?) "etp=1: ep's 8 ranks neighbours, one node ($w8 = $w16 ms); etp = tp: across two ($d8 > $d16 ms)"
# cp folds into the expert ranks too: tp=1, cp=2, ep=8 takes 8 neighbouring ranks (one node)
c8=$(epc 2 8 "" "tp=1,cp=2,dp=8,ep=8,kernels=te") c16=$(epc 1 16 "" "tp=1,cp=2,dp=8,ep=8,kernels=te")
ok $(awk -v a="$c8" -v b="$c16" 'BEGIN { exit !(a > 0 && a == b) }'; echo $?) \
  "cp=2, ep=8: ep's ranks neighbours across the cp ranks, one node ($c8 = $c16 ms)"
# search tries etp=1 where tp > 1 (sp=1, all-to-all or flex, ep from tp x dp)
run_pm search --model mixtral-8x7b --gpu h100 --gpus 16 --global-batch 64 --seq 4096 --predictor roofline \
  --fix tp=2,pp=1,etp=1 --top 100 --format json
ok $([ "$rc" -eq 0 ] && jq -e '(.best | length) > 0 and all(.best[].strategy; .etp == 1 and .sp and
       .dispatcher != "allgather") and any(.best[].strategy; .ep > .dp)' "$TMP/out" >/dev/null; echo $?) \
  "search --fix tp=2,etp=1: every layout with sp and all-to-all or flex, ep beyond dp among them"
run_pm search --model mixtral-8x7b --gpu h100 --gpus 16 --global-batch 64 --seq 4096 --predictor roofline \
  --fix tp=2,pp=1 --top 1000 --format json
ok $([ "$rc" -eq 0 ] && jq -e '([.best[].strategy.etp] | unique) == [null, 1]' "$TMP/out" >/dev/null; echo $?) \
  "search with tp=2: both expert tps tried (the default and etp=1)"

finish
