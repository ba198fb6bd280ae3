#!/bin/sh
# t1070-hand.sh: figures derived by hand from the model's dimensions and gpus.d, for the terms make mutate found no other test pinned (ZeRO-1's bf16 parameter all-gather, expert parallelism's closed form, ...).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 15

H100=NVIDIA_H100_80GB_HBM3

# ZeRO-1 (Megatron's distributed optimizer) reduce-scatters the fp32 gradients and
# all-gathers the bf16 parameters, half their bytes: on one node of ring collectives (A100's
# NVSwitch has no NVLink SHARP), with the bandwidth term dominant, its data-parallel traffic
# is (1 + 1/2)/2 = 3/4 of the all-reduce's.
# gpt27 STRATEGY FIELD: a field of GPT-3 2.7B's training step on 8 A100s, global batch 16
gpt27 () {
  run_pm --model gpt3-2.7b --gpu a100 --mode train --batch 16 --strategy "$1" --format json
  jq -e ".predictions[0].$2" "$TMP/out"
}
z0=$(gpt27 dp=8,zero=0 comm_ms.dp) z1=$(gpt27 dp=8,zero=1 comm_ms.dp)
ok $(awk -v a="$z0" -v b="$z1" 'BEGIN { r = b / a; exit !(a > 0 && r > 0.745 && r < 0.755) }'; echo $?) \
  "zero=1 moves 3/4 of zero=0's data-parallel bytes (fp32 gradients out, bf16 parameters back)"

# --explain's expert-parallel row, the seeds' closed form by hand: Qwen3-30B-A3B (hidden
# 2048, experts 768 wide, top-8) over Z = 128 ranks of 16 nodes, B = 128 x 1024 tokens:
# T_math = 4BkDF/(ZC), T_comms = 4BD(Z-8)/(WZ) min(8k/Z, 1), W the NIC's bytes/s.
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 128 --seq 1024 \
  --strategy ep=128,dp=128 --explain
c=$(gpu_key $H100 bf16_tflops) w=$(gpu_key $H100 nic_gbps)
ok $(awk -v c="$c" -v w="$w" '$1 == "ep" && $2 == 128 {
       b = 128 * 1024; d = 2048; f = 768; k = 8; z = 128; C = c * 1e12; W = w * 1e9
       share = 8 * k / z; if (share > 1) share = 1
       tm = 4 * b * k * d * f / (z * C) * 1e3; tc = 4 * b * d * (z - 8) / (W * z) * share * 1e3
       found = 1; good = $3 == "inter-node" && ($4 - tm)^2 < (1e-3 * tm)^2 && ($5 - tc)^2 < (1e-3 * tc)^2 }
     END { exit !(found && good) }' "$TMP/out"; echo $?) \
  "--explain: expert parallelism's t_math and t_comms as the closed form gives them by hand"

# Megatron's vocabulary-parallel cross entropy all-reduces three fp32 per token (the max,
# the sum of exponentials, the target's logit): 3 x 4 x 1024 tokens of a micro-batch
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 2 --seq 1024 --strategy tp=2 --per-op --format csv
ok $([ "$rc" -eq 0 ] && [ "$(awk -F, '$14 == "tp allreduce " (3 * 4 * 1024 / 1e6) "MB" && $11 > 0 { n++ }
                                      END { print n + 0 }' "$TMP/out")" -eq 1 ]; echo $?) \
  "tp=2: one forward all-reduce of 3 fp32 per token for the cross entropy (12288 bytes)"

# a predictor's bad parameter file is bad input for perfmod kernel too: exit 2, nothing printed
# (well formed, so it is read at once; the network's shape is checked when first used)
sed 's/^tc_vector\.1\.layers: .*/tc_vector.1.layers: 14,0,96,96,1/' "$top_srcdir/params/tile-mlp-tc.params" >"$TMP/bad.params"
expect_fail 2 "bad.params: tc_vector.1.layers: bad width '0'" "kernel with a malformed tile-mlp parameter file: exit 2, said, nothing printed" -- \
  kernel --op norm --rows 16 --cols 512 --gpu a100 --dtype fp16 --predictor tile-mlp \
  --plugin-opt tile-mlp:tc_params="$TMP/bad.params"

# ZeRO-3 (FSDP) reduce-scatters each layer's gradients during the backward pass even where
# the framework does not overlap gradient reduction (kernels=eager): what is left after the
# backward is a small part of zero=2's gradient traffic, all of which waits for it
g2=$(gpt27 dp=8,zero=2,kernels=eager grads_ms) g3=$(gpt27 dp=8,zero=3,kernels=eager grads_ms)
ok $(awk -v a="$g2" -v b="$g3" 'BEGIN { exit !(a > 0 && b >= 0 && b < 0.25 * a) }'; echo $?) \
  "zero=3 without overlap asked: its gradient reduce-scatter overlaps the backward ($g3 ms left, zero=2 $g2 ms)"

# Expert parallelism's all-to-all bytes per rank by hand: Mixtral 8x7B, a micro-batch of
# 1024 tokens each sent to top-2 experts, hidden 4096 in bf16: 1024 x 2 x 4096 x 2 bytes,
# times the busiest rank's load (ep:imbalance=2); dispatch and combine, forward and backward
bytes=$(awk 'BEGIN { print 1024 * 2 * 4096 * 2 * 2 / 1e6 }')
run_pm --model mixtral-8x7b --gpu h100 --mode train --batch 2 --seq 1024 --strategy ep=2,dp=2 \
  --plugin-opt ep:imbalance=2 --per-op --format csv
ok $([ "$rc" -eq 0 ] && [ "$(awk -F, -v b="ep alltoall ${bytes}MB" '$14 == b { n++ } $14 ~ /^ep / && $14 != b { bad++ }
                                  END { print (bad ? -1 : n + 0) }' "$TMP/out")" -eq 4 ]; echo $?) \
  "ep=2 with imbalance 2: four all-to-alls a layer of 1024 x 2 x 4096 x 2 x 2 = ${bytes} MB each"

# --explain's pipeline row by hand: GPT-3 2.7B (D 2560, F 10240, 32 layers), B = 8 x 1024
# tokens, p = 4 stages, m = 8 micro-batches, W the NVLink's bytes/s:
# t_math = 8BDF/C, t_comms = 1.5 x 2BD/(W L), bubble (p-1)/(m+p-1) = 3/11, total p2p
# 2BD/(W m) (m + p - 2)
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 8 --strategy pp=4 --explain
c=$(gpu_key $H100 bf16_tflops) w=$(gpu_key $H100 link_gbps)
ok $(awk -v c="$c" -v w="$w" '$1 == "pp" && $2 == 4 {
       b = 8 * 1024; d = 2560; f = 10240; L = 32; p = 4; m = 8; C = c * 1e12; W = w * 1e9
       tm = 8 * b * d * f / C * 1e3; tc = 1.5 * 2 * b * d / (W * L) * 1e3
       p2p = 2 * b * d / (W * m) * (m + p - 2) * 1e3
       found = 1
       good = ($4 - tm)^2 < (1e-3 * tm)^2 && ($5 - tc)^2 < (0.02 * tc)^2 &&
              index($0, sprintf("= %.3f with m = 8 micro-batches; total p2p %.3f ms", 3 / 11, p2p)) > 0 }
     END { exit !(found && good) }' "$TMP/out"; echo $?) \
  "--explain: the pipeline's t_math, t_comms, bubble 3/11 and total p2p by hand"

# Pipeline transfers by hand: a stage's activation comes in and goes out in the forward pass
# and its gradient comes back and goes on in the backward, 4 transfers a micro-batch of
# 1024 x 2560 x 2 bytes, each bytes / (NVLink x efficiency) + NCCL's Simple send's latency
# (8.4 + 3.4 us: physics.h)
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 8 --seq 1024 --strategy pp=4 --format json
w=$(gpu_key $H100 link_gbps) eff=$(gpu_key defaults link_efficiency)
pp=$(jq -e '.predictions[0].comm_ms.pp' "$TMP/out")
ok $(awk -v w="$w" -v e="$eff" -v got="$pp" 'BEGIN {
       t = 1024 * 2560 * 2 / (w * 1e9 * e) + 11.8e-6; want = 4 * 8 * t * 1e3
       exit !(w > 0 && e > 0 && (got - want)^2 < (1e-6 * want)^2) }'; echo $?) \
  "pp=4, 8 micro-batches: 4 x 8 stage transfers of 5.24 MB each way, forward and backward ($pp ms)"

# H800: an H100 with NVLink cut to 400 GB/s both ways (200 each way): an all-reduce of
# 1 GiB over 8 GPUs of its NVSwitch (NVLink SHARP) moves 9/8 of it each way, 2.25x the H100's
run_pm kernel --op collective --coll all_reduce --bytes 1073741824 --ranks 8 --gpu h800 --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && awk -F, 'NR == 2 && $1 == "roofline" && $4 == "h800-sxm" {
       want = 9 / 8 * 1073741824 / 200e9 * 1e3; f = ($5 - want)^2 < (1e-6 * want)^2 } END { exit !f }' "$TMP/out"; echo $?) \
  "H800 (gpus.d): an 8-GPU all-reduce of 1 GiB at 200 GB/s each way, by hand"

# Fused attention of 16 tokens is memory-bound: the forward reads Q, K, V and writes O,
# 4 x 16 x 32 heads x 80 x 2 bytes at the memory bandwidth; the backward reads and writes
# twice that (dO, O, Q, K, V in; dQ, dK, dV out)
bw=$(gpu_key $H100 mem_bw_gbps)
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 1 --seq 16 --per-op --format csv --predictor roofline
ok $([ "$rc" -eq 0 ] && awk -F, -v bw="$bw" '$3 == "ATTENTION" && $2 ~ /layers_0_/ {
       fw = 4 * 16 * 32 * 80 * 2 / (bw * 1e9) * 1e3; n++
       good = ($6 - fw)^2 < (1e-6 * fw)^2 && ($7 - 2 * fw)^2 < (1e-6 * fw)^2 } END { exit !(n == 1 && good) }' "$TMP/out"; echo $?) \
  "roofline attention of 16 tokens: forward 4 x 16 x 32 x 80 x 2 bytes at the bandwidth, backward twice it"

# tile-mlp's ensemble by hand: the shipped GEMM networks have 3 members; each made the
# only member (its tensors renamed to member 1 in the header, members: 1) predicts t_k; the
# ensemble predicts their geometric mean g and the spread g (exp(sd) - 1), sd the members'
# sample standard deviation of ln t_k (outputs are log-times)
P="$top_srcdir/params/tile-mlp-gemm.params"
G="kernel --op gemm --m 4096 --n 4096 --k 4096 --gpu h100 --dtype bf16 --predictor tile-mlp --format csv"
: >"$TMP/members"
for k in 1 2 3; do
  sed "1,/^data\$/{s/^members: 3\$/members: 1/;s/^\(tensor \)\{0,1\}\(tc_[a-z]*\)\.1\./\1\2.@./
       s/^\(tensor \)\{0,1\}\(tc_[a-z]*\)\.$k\./\1\2.1./;s/^\(tensor \)\{0,1\}\(tc_[a-z]*\)\.@\./\1\2.$k./}" \
    "$P" >"$TMP/m$k.params"
  # shellcheck disable=SC2086
  "$PERFMOD" $G --plugin-opt tile-mlp:gemm_params="$TMP/m$k.params" 2>/dev/null | awk -F, 'NR == 2 { print $5 }' >>"$TMP/members"
done
# shellcheck disable=SC2086
run_pm $G
ok $([ "$rc" -eq 0 ] && grep -q '^members: 3$' "$P" && [ "$(grep -c . "$TMP/members")" -eq 3 ] &&
     awk -F, 'FNR == NR { l[NR] = log($1); s += l[NR]; n++; next }
              FNR == 2 { m = s / n; for (i = 1; i <= n; i++) v += (l[i] - m)^2; sd = sqrt(v / (n - 1))
                         g = exp(m); sp = g * (exp(sd) - 1)
                         f = sd > 0 && ($5 - g)^2 < (1e-6 * g)^2 && ($6 - sp)^2 < (1e-4 * sp)^2 }
              END { exit !f }' "$TMP/members" "$TMP/out"; echo $?) \
  "tile-mlp's ensemble: the geometric mean of its 3 members' times, spread g (exp(sd) - 1)"

# KV cache per rank when tp is above the KV heads: Qwen3-32B's 8 KV heads over tp=16 leave
# each rank one replicated head: 64 layers x (K, V) x 1 head x 128 x (1024 + 128) tokens x 2 B
run_pm --model qwen3-32b --gpu h100 --mode inf --batch 1 --seq 1024 --gen 128 --strategy tp=16 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.predictions[0].memory_gib.kv_cache * 1073741824 | . - 64 * 2 * 1 * 128 * 1152 * 2 | fabs < 1' "$TMP/out" >/dev/null; echo $?) \
  "tp=16 over 8 KV heads: each rank caches one head, 37,748,736 bytes by hand"

# Full recomputation keeps each layer's input only, split over tp by sequence parallelism:
# sp=1 saves 32 layers x 1024 x 2560 x 2 bytes x (1 - 1/2) of activations against sp=0
act () {
  run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 8 --seq 1024 --strategy "tp=2,sp=$1,recompute=full,zero=0" --format json
  jq -e '.predictions[0].memory_gib.activations' "$TMP/out"
}
a0=$(act 0) a1=$(act 1)
ok $(awk -v a="$a0" -v b="$a1" 'BEGIN { d = (a - b) * 1073741824; w = 32 * 1024 * 2560 * 2 / 2; exit !(a > 0 && (d - w)^2 < 1) }'; echo $?) \
  "recompute=full: sequence parallelism halves the 32 kept layer inputs (83,886,080 bytes less)"

# Mixtral's config without tie_word_embeddings is untied, as Hugging Face's MixtralConfig
# defaults: the built-in's count (its model card's 46,702,792,704) from the key-less copy
jq 'del(.tie_word_embeddings)' "$top_srcdir/models/mixtral-8x7b.json" >"$TMP/mixtral.json"
run_pm models --model "$TMP/mixtral.json"
ok $([ "$rc" -eq 0 ] && ! grep -q tie_word "$TMP/mixtral.json" &&
     awk 'NR == 2 && $NF == 46702792704 { f = 1 } END { exit !f }' "$TMP/out"; echo $?) \
  "a Mixtral config without tie_word_embeddings: untied, 46,702,792,704 parameters"

# An all-to-all over two nodes by hand: Qwen3-30B-A3B, ep=16 on 2 x 8 H100s, a micro-batch
# of 1024 tokens x top-8 x 2048 x 2 bytes; the slower of the 7/16 within the node (NVLink
# x efficiency) and the 8/16 leaving it (NIC x efficiency), plus NCCL's Simple step over the
# network (8.4 + 14 us: physics.h)
w=$(gpu_key $H100 link_gbps) nic=$(gpu_key $H100 nic_gbps)
le=$(gpu_key defaults link_efficiency) ne=$(gpu_key defaults nic_efficiency)
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --batch 16 --seq 1024 --strategy ep=16,dp=16 --per-op --format csv
ok $([ "$rc" -eq 0 ] && awk -F, -v w="$w" -v nic="$nic" -v le="$le" -v ne="$ne" '
       $4 ~ /(^|_)layers_0_ep_alltoall_fw$/ { n++
         b = 1024 * 8 * 2048 * 2; ti = 7 / 16 * b / (w * 1e9 * le); to = 8 / 16 * b / (nic * 1e9 * ne)
         want = ((ti > to ? ti : to) + 22.4e-6) * 1e3
         if (!(w > 0 && nic > 0 && ($11 - want)^2 < (1e-6 * want)^2)) bad++ }
       END { exit !(n == 2 && !bad) }' "$TMP/out"; echo $?) \
  "ep=16 over 2 nodes: dispatch and combine of 33.55 MB a rank, NIC-bound, one network step's latency"
