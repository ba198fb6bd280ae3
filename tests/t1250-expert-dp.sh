#!/bin/sh
# t1250-expert-dp.sh: the routed experts' gradients and optimizer state over Megatron-Core's expert data-parallel group, grad_fp32=0 (bf16 gradients), the parameters' all-gather hidden in the next forward, and the routed copies the experts keep, by hand.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 19

# Qwen3-30B-A3B (48 layers, 128 experts of 3 x 2048 x 768 = 4718592 parameters) on one
# node of 8 H100, tp=1, dp=8, the distributed optimizer.  With ep=E each rank holds 128 / E
# experts a layer, and each expert lives on 8 / E ranks: their gradients are reduced over
# those 8 / E ranks (E ranks apart), not over the 8 of dp.
q30 () {
  run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 \
    --predictor roofline --strategy "tp=1,pp=1,dp=8,zero=1,kernels=te,$1" --format json
  jq -e ".predictions[0].$2" "$TMP/out"
}
nccl () {   # nccl COLL BYTES RANKS: NCCL's cost model in ms, nothing learned
  "$PERFMOD" kernel --op collective --coll "$1" --bytes "$2" --ranks "$3" --gpu h100 \
    --predictor tile-mlp --plugin-opt tile-mlp:comm_params=none | awk 'END { print $2 }'
}
# ep=4: 48 x 32 x 4718592 = 7247757312 expert parameters a rank, on 2 ranks each: their fp32
# gradients (28991029248 bytes) reduce-scattered and bf16 parameters (14495514624 bytes)
# all-gathered over 2 ranks.  ep=8: each expert on one rank, nothing of theirs reduced.
# The dense parameters are the same on both, so the difference is the experts' collectives.
d4=$(q30 ep=4 comm_ms.dp) d8=$(q30 ep=8 comm_ms.dp)
rs=$(nccl reduce_scatter 28991029248 2) ag=$(nccl all_gather 14495514624 2)
ok $(awk -v a="$d4" -v b="$d8" -v r="$rs" -v g="$ag" \
       'BEGIN { want = r + g; exit !(r > 0 && g > 0 && ((a - b) - want)^2 < (1e-4 * want)^2) }'; echo $?) \
  "ep=4: the experts' gradients over their 2 replicas: dp's time grows by NCCL's reduce-scatter + all-gather over 2 ranks ($d4 - $d8 = $rs + $ag ms)"
# grad_fp32=0: the experts' gradients reduce-scattered in bf16, half the bytes
g4=$(q30 ep=4,grad_fp32=0 comm_ms.dp) g8=$(q30 ep=8,grad_fp32=0 comm_ms.dp)
rs16=$(nccl reduce_scatter 14495514624 2)
ok $(awk -v a="$g4" -v b="$g8" -v r="$rs16" -v g="$ag" \
       'BEGIN { want = r + g; exit !(((a - b) - want)^2 < (1e-4 * want)^2) }'; echo $?) \
  "grad_fp32=0: the experts' reduce-scatter moves bf16 (14495514624 bytes): $g4 - $g8 = $rs16 + $ag ms"

# The distributed optimizer shards each expert's state over its replicas: a rank holds
# 1/8 of every parameter's state whatever ep (128/E experts x 1/(8/E) = 128/8), the same
# as with ep=1.  (Sharded over all 8 ranks of dp, ep=8 would hold 1/64 of the experts'.)
o1=$(q30 ep=1 memory_gib.optimizer) o4=$(q30 ep=4 memory_gib.optimizer) o8=$(q30 ep=8 memory_gib.optimizer)
ok $(awk -v a="$o1" -v b="$o4" -v c="$o8" \
       'BEGIN { exit !(a > 0 && (a - b)^2 < 1e-12 && (a - c)^2 < 1e-12) }'; echo $?) \
  "optimizer state per rank the same at ep=1, 4 and 8 ($o1, $o4, $o8 GiB): each expert's over its replicas"
# ... and by hand: 12 bytes (fp32 master, two moments) x 48 x 128 x 4718592 / 8 of the
# experts, at ep=8 all on the rank that holds them (one replica)
w8=$(q30 ep=8 memory_gib.weights) w1=$(q30 ep=1 memory_gib.weights)
ok $(awk -v o="$o8" -v a="$w8" -v b="$w1" 'BEGIN {
       e = 48 * 128 * 4718592; gib = 1024^3
       dense = (b * gib / 2) - e                    # ep=1: every parameter, 2 bytes each
       want = 12 * (dense + e) / 8 / gib
       exit !(a * gib / 2 - (dense + e / 8) < 1 && (a * gib / 2 - (dense + e / 8))^2 < 1 &&
              (o - want)^2 < (1e-6 * want)^2) }'; echo $?) \
  "ep=8: 1/8 of the experts' weights and all of their optimizer state on a rank (12 bytes a parameter)"
# gradients: fp32 by default, bf16 with grad_fp32=0, exactly half
f4=$(q30 ep=4 memory_gib.gradients) h4=$(q30 ep=4,grad_fp32=0 memory_gib.gradients)
ok $(awk -v a="$f4" -v b="$h4" 'BEGIN { exit !(a > 0 && (a - 2 * b)^2 < 1e-12) }'; echo $?) \
  "grad_fp32=0: the gradients' memory is half fp32's ($h4 of $f4 GiB)"

# Two nodes of 8, dp=16, ep=8: each expert's 2 replicas are 8 ranks apart, on different
# nodes, so their reduction crosses the network and costs more than the same pair in a node
t8=$(run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --predictor roofline \
       --strategy tp=1,pp=1,dp=16,ep=8,zero=1,kernels=te --format json; jq -e '.predictions[0].comm_ms.dp' "$TMP/out")
t16=$(run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --predictor roofline \
       --strategy tp=1,pp=1,dp=16,ep=16,zero=1,kernels=te --format json; jq -e '.predictions[0].comm_ms.dp' "$TMP/out")
# ep=8 on 16 ranks: 48 x 16 x 4718592 = 3623878656 experts' parameters a rank
rs2=$(nccl reduce_scatter 14495514624 2) ag2=$(nccl all_gather 7247757312 2)
ok $(awk -v a="$t8" -v b="$t16" -v r="$rs2" -v g="$ag2" \
       'BEGIN { exit !(r > 0 && a - b > 1.5 * (r + g)) }'; echo $?) \
  "dp=16, ep=8 on 2 nodes: the experts' replicas on two nodes reduce over the network ($t8 - $t16 ms > 1.5 x in-node $rs2 + $ag2)"

# the key: spelled in the strategy, written for Megatron-LM and Megatron-Bridge, refused
# when it is not 0 or 1
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 \
  --strategy tp=1,dp=8,ep=8,grad_fp32=0 --print megatron
ok $([ "$rc" -eq 0 ] && grep -q -- '--grad-reduce-in-bf16' "$TMP/out"; echo $?) \
  "--print megatron writes grad_fp32=0 as --grad-reduce-in-bf16"
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 \
  --strategy tp=1,dp=8,ep=8,grad_fp32=0 --print nemo
ok $([ "$rc" -eq 0 ] && grep -q 'ddp.grad_reduce_in_fp32=false' "$TMP/out" &&
     grep -q 'mixed_precision.grad_reduce_in_fp32=false' "$TMP/out"; echo $?) \
  "--print nemo writes it as the Bridge's two grad_reduce_in_fp32=false fields"
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --predictor roofline \
  --strategy tp=1,dp=8,ep=8,grad_fp32=0 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.strategy.spec | test("grad_fp32=0")' "$TMP/out" >/dev/null; echo $?) \
  "the run's strategy spec carries grad_fp32=0"
expect_one_line 2 'grad_fp32=2: expected 0 or 1' "grad_fp32=2 is refused in one line" -- \
  --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --strategy dp=8,grad_fp32=2
# the table's strategy line names the experts' group: 16 ranks, 8 ways of expert parallelism
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --predictor roofline \
  --strategy tp=1,dp=16,ep=8
ok $([ "$rc" -eq 0 ] && grep -q '^strategy: .*, expert data parallelism 2$' "$TMP/out"; echo $?) \
  "the strategy line says each expert's replicas: expert data parallelism 2 (16 ranks / ep=8)"

# --overlap-param-gather, which perfmod --print writes for Megatron-Core with the distributed
# optimizer: the updated parameters are gathered bucket by bucket as the next step's forward
# reaches them, as the gradients are reduced during the backward.  GPT-3 2.7B on 8 A100,
# zero=1: 2.65e9 parameters a rank (its bf16 weights' GiB x 2^30 / 2) in ceil(p / 40e6)
# buckets; every bucket but the last hides (the forward and backward of a micro-batch are
# longer than the gathers and the scatters), so what is exposed is dp's time / buckets
run_pm --model gpt3-2.7b --gpu a100 --mode train --batch 16 --strategy dp=8,zero=1,kernels=te --format json
ok $([ "$rc" -eq 0 ] && jq -e '.predictions[0] | (.memory_gib.weights * 1073741824 / 2 / 40e6 | ceil) as $b
       | .comm_ms.dp > 0 and ((.grads_ms * $b - .comm_ms.dp) | fabs) < 1e-6 * .comm_ms.dp' "$TMP/out" >/dev/null
     echo $?) "zero=1 under Megatron-Core: the reduce-scatter and the parameters' all-gather each hide but their last bucket"
run_pm --model gpt3-2.7b --gpu a100 --mode train --batch 16 --strategy dp=8,zero=1,kernels=te --format json \
  --plugin-opt dp:overlap=0
ok $([ "$rc" -eq 0 ] && jq -e '.predictions[0] | .comm_ms.dp > 0 and ((.grads_ms - .comm_ms.dp) | fabs) < 1e-9 * .comm_ms.dp' \
       "$TMP/out" >/dev/null; echo $?) "dp:overlap=0: the scatter and the gather both exposed after the backward"

# With etp=1 the experts' replicas reach beyond dp: tp=4, ep=2, dp=1 holds each whole
# expert on 2 of the 4 ranks, so Megatron-Core's distributed optimizer (the default under
# kernels=te) halves their state: 12 bytes x 48 x 64 x 4718592 / 2 = 81.0 GiB of the 85.3
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 8 --seq 4096 --predictor roofline \
  --strategy tp=4,ep=2,etp=1,sp=1,dp=1 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.strategy.zero == 1 and (.predictions[0].memory_gib.optimizer
       - 12 * 48 * 64 * 4718592 / 2 / 1073741824) as $dense | $dense > 0 and $dense < 5' "$TMP/out" >/dev/null
     echo $?) "etp=1, dp=1: the distributed optimizer by default, the experts' state over their 2 replicas"
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 8 --seq 4096 \
  --strategy tp=4,ep=2,etp=1,sp=1,dp=1 --print megatron
ok $([ "$rc" -eq 0 ] && grep -q -- '--use-distributed-optimizer' "$TMP/out"; echo $?) \
  "--print megatron asks for the distributed optimizer there too"
expect_one_line 2 'grad_fp32=0: .*mixed precision' "grad_fp32=0 in fp32 training is refused in one line" -- \
  --model qwen3-30b-a3b --gpu h100 --mode train --batch 64 --seq 4096 --precision fp32 --strategy dp=8,grad_fp32=0
expect_one_line 2 'grad_fp32=0: .*training step' "grad_fp32=0 in inference is refused in one line" -- \
  --model qwen3-30b-a3b --gpu h100 --mode inf --batch 8 --seq 1024 --strategy tp=2,grad_fp32=0

# The activations a routed layer keeps grow with top-k by, per token and extra copy, fc1's
# output (2 x 768 x 2 bytes), the activation's (768 x 2) and the copy fc1 keeps for its
# weight gradient (2048 x 2): Qwen3-30B-A3B against itself with 4 experts a token, one
# micro-batch of 4096 tokens in flight on each of 48 layers: 48 x 4096 x 4 x 8704 bytes
sed 's/"num_experts_per_tok": 8/"num_experts_per_tok": 4/' "$top_srcdir/models/qwen3-30b-a3b.json" > "$TMP/k4.json"
act () {
  run_pm --model "$1" --gpu h100 --mode train --batch 8 --seq 4096 --predictor roofline \
    --strategy dp=8,ep=8,zero=1 --format json
  jq -e '.predictions[0].memory_gib.activations' "$TMP/out"
}
a8=$(act "$top_srcdir/models/qwen3-30b-a3b.json") a4=$(act "$TMP/k4.json")
ok $(awk -v a="$a8" -v b="$a4" 'BEGIN { want = 48 * 4096 * 4 * 8704 / 1073741824
       exit !(((a - b) - want)^2 < (1e-6 * want)^2) }'; echo $?) \
  "top-8 against top-4: 4 more routed copies of fc1's input and output a token ($a8 - $a4 GiB)"

# Under Megatron-Core's default expert tp the routed copies of both tp ranks' tokens are
# gathered onto each (Mixtral, tp=2, sp, ep=4: 1024 tokens x 2 copies x 4096 x 2 bytes on
# each of 32 layers), where with etp=1 each rank keeps its own half: 0.25 GiB more
mix () {
  run_pm --model mixtral-8x7b --gpu h100 --mode train --dtype bf16 --batch 8 --seq 1024 \
    --predictor roofline --strategy "tp=2,ep=4,dp=4,sp=1,kernels=te$1" --format json
  jq -e '.predictions[0].memory_gib.activations' "$TMP/out"
}
m0=$(mix "") m1=$(mix ",etp=1")
ok $(awk -v a="$m0" -v b="$m1" 'BEGIN { want = 32 * 1024 * 2 * 4096 * 2 / 2 / 1073741824
       exit !(((a - b) - want)^2 < (1e-6 * want)^2) }'; echo $?) \
  "expert tp = tp keeps the copies gathered over tp: 0.25 GiB more than etp=1 ($m0 - $m1 GiB)"
