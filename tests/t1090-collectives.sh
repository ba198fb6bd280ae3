#!/bin/sh
# t1090-collectives.sh: tile-mlp's collectives on NCCL's cost model (never faster for a larger buffer, never faster than the links allow, the all-reduce the issue measured, a missing network refused) and DeepEP's tables and kernels by hand.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 14

# coll_ms GPU OP RANKS BYTES: tile-mlp's and the roofline's ms, on one line
coll_ms () {
  "$PERFMOD" kernel --op collective --coll "$2" --ranks "$3" --bytes "$4" --gpu "$1" \
    --predictor tile-mlp,roofline --format csv 2>&1 |
    awk -F, '$1 == "tile-mlp" { t = $5 } $1 == "roofline" { r = $5 } END { print t, r }'
}

# Over buffers from 1 KB to 1 GB (powers of 2 and the sizes between them) on a training
# GPU (H100), a PCIe one (L40S) and one no table measured (B200), within a node and across
# two: each op's time never falls as the buffer grows, and never goes under the roofline.
bad=0 n=0
for gpu in h100-sxm l40s b200-sxm; do
  for op in all_reduce all_gather reduce_scatter alltoall; do
    for r in 2 8 16; do
      prev=0
      for b in 1000 1024 3000 65536 100000 1048576 3000000 16777216 50000000 134217728 1000000000; do
        set -- $(coll_ms $gpu $op $r $b)
        n=$((n + 1))
        if [ -z "${1:-}" ] || [ -z "${2:-}" ] ||
           awk -v t="$1" -v p="$prev" -v f="$2" 'BEGIN { exit !(t < p || t < f * 0.999) }'; then
          bad=$((bad + 1))
          diag "$gpu $op ranks=$r bytes=$b: tile-mlp ${1:-none} ms after $prev, roofline ${2:-none}"
        fi
        prev=${1:-0}
      done
    done
  done
done
ok $([ "$bad" -eq 0 ] && [ "$n" -eq 396 ]; echo $?) "collectives: monotone in bytes, never under the links' bound ($n cases)"

# The all-reduce of 128 MiB on 2, 4 and 8 H100 (aiconfigurator's h100_sxm NCCL 2.27.3 table,
# message_size 67108864 fp16 elements: 0.4656, 0.6152, 0.5781 ms): within 10 % each, and
# 4 GPUs slower than 2 as measured.
t2=$(coll_ms h100-sxm all_reduce 2 134217728 | cut -d' ' -f1)
t4=$(coll_ms h100-sxm all_reduce 4 134217728 | cut -d' ' -f1)
t8=$(coll_ms h100-sxm all_reduce 8 134217728 | cut -d' ' -f1)
ok $(awk -v a="$t2" -v b="$t4" -v c="$t8" 'BEGIN { e2 = a / 0.4656 - 1; e4 = b / 0.6152 - 1; e8 = c / 0.5781 - 1
       exit !(a != "" && e2 * e2 < 0.01 && e4 * e4 < 0.01 && e8 * e8 < 0.01 && b > a) }'; echo $?) \
  "H100 all-reduce of 128 MiB on 2 / 4 / 8 GPUs within 10 % of the measured ($t2 / $t4 / $t8 ms)"

# NVLink SHARP: 8 H100 move (1 + 1/8) of the buffer each way, under a ring's 2 x 7/8:
# the roofline's bound is 1.125 x 1 GB / 450 GB/s
r8=$(coll_ms h100-sxm all_reduce 8 1000000000 | cut -d' ' -f2)
ok $(awk -v r="$r8" 'BEGIN { w = 1.125 * 1e9 / 450e9 * 1e3; exit !(r != "" && (r / w - 1)^2 < 1e-10) }'; echo $?) \
  "the all-reduce's bound over NVSwitch with SHARP: (1 + 1/n) of the buffer ($r8 ms)"

# 16 H100 span two nodes: the bound is a tree's, the buffer once each way over the node's 8
# NICs (8 x 50 GB/s), under a ring's 2 x 15/16 of it
r16=$(coll_ms h100-sxm all_reduce 16 1000000000 | cut -d' ' -f2)
ok $(awk -v r="$r16" 'BEGIN { w = 1e9 / 400e9 * 1e3; exit !(r != "" && (r / w - 1)^2 < 1e-10) }'; echo $?) \
  "across nodes the bound is the NICs', the buffer once over a tree's one edge ($r16 ms)"

# Without the collectives' network tile-mlp gives NCCL's model itself and says so: 1 MB over
# 8 H100 runs NVLink SHARP, 25 us + 9/8 MB at 450 x 0.8 GB/s (the ring's LL: 15 us + 2 x 7/8
# MB at a quarter of it, dearer)
run_pm kernel --op collective --coll all_reduce --ranks 8 --bytes 1e6 --gpu h100-sxm --predictor tile-mlp \
  --plugin-opt tile-mlp:comm_params=none --format csv
eff=$(gpu_key defaults link_efficiency)
ok $([ "$rc" -eq 0 ] && awk -F, -v e="$eff" 'NR == 2 { want = (25e-6 + 1.125 * 1e6 / (450e9 * e)) * 1e3
       f = ($5 / want - 1)^2 < 1e-12 && $9 == "NCCL'"'"'s model (no network to correct it)" } END { exit !f }' "$TMP/out"; echo $?) \
  "no collectives' network: NCCL's model itself, by hand, named in the note"

# --- DeepEP: aiconfigurator's tables, the mechanism by hand ---
# Columns of eval --per-op --format csv: 6 class (the op) 7 dtype 8 b (SMs) 9 m (tokens)
# 11 k (hidden) 12 h (experts) 14 ranks 15 bytes 17 measured_ms 18 predicted_ms
A="$TMP/aic/aiconfigurator"
mkdir -p "$A/h100_sxm/comm/sglang/x"
printf 'node:\n  num_gpus_per_node: 8\n' >"$A/h100_sxm.yaml"
dev="NVIDIA H100 80GB HBM3"
{ echo "framework,version,device,op_name,kernel_source,node_num,hidden_size,num_token,num_topk,num_experts,dispatch_sms,dispatch_transmit_us,dispatch_notify_us,combine_sms,combine_transmit_us,combine_notify_us"
  echo "sglang,x,$dev,normal,deepep,1,1024,100,2,8,4,30,2,8,50,0"
  echo "sglang,x,$dev,normal,deepep,2,1024,100,2,16,24,60,0,24,90,0"; } \
  >"$A/h100_sxm/comm/sglang/x/wideep_deepep_normal_perf.csv"
{ echo "framework,version,device,op_name,kernel_source,node_num,hidden_size,num_token,num_topk,num_experts,combine_avg_t_us,combine_bandwidth_gbps,dispatch_avg_t_us,dispatch_bandwidth_gbps"
  echo "sglang,x,$dev,ll,deepep,2,1024,128,8,256,40,1,20,1"; } \
  >"$A/h100_sxm/comm/sglang/x/wideep_deepep_ll_perf.csv"
run_pm eval --data "$TMP/aic" --table deepep --predictor roofline --per-op --format csv
awk -F, 'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%s,%g\n", $6, $7, $8, $9, $11, $12, $14, $17 }' \
  "$TMP/out" | sort >"$TMP/got"
printf '%s\n' "deepep_ll_combine,bf16,0,128,1024,256,16,0.04" "deepep_ll_dispatch,fp8,0,128,1024,256,16,0.02" \
  "deepep_normal_combine,bf16,24,100,1024,16,16,0.09" "deepep_normal_combine,bf16,8,100,1024,8,8,0.05" \
  "deepep_normal_dispatch,fp8,24,100,1024,16,16,0.06" "deepep_normal_dispatch,fp8,4,100,1024,8,8,0.032" |
  sort >"$TMP/want"
ok $([ "$rc" -eq 0 ] && cmp -s "$TMP/got" "$TMP/want"; echo $?) \
  "DeepEP tables: dispatch (fp8) and combine (bf16) rows, node_num x the system's 8 GPUs a node, transmit + notify"
[ "$rc" -eq 0 ] || diag "$(cat "$TMP/err")" "$(diff "$TMP/got" "$TMP/want")"

# One node, 8 experts over 8 ranks, top 2: another rank holds one of a token's experts with
# chance 1 - 7/8 x 6/7 = 1/4; the normal dispatch sends 100 tokens x 7 ranks x 1/4 x 1024
# fp8 values with a float scale per 128 over NVLink (450 GB/s: a bound)
link=$(gpu_key NVIDIA_H100_80GB_HBM3 link_gbps) nic=$(gpu_key NVIDIA_H100_80GB_HBM3 nic_gbps)
ok $(awk -F, -v l="$link" '$6 == "deepep_normal_dispatch" && $14 == 8 {
       want = 100 * 7 * 0.25 * 1024 * (1 + 4 / 128) / (l * 1e9) * 1e3; f = ($18 / want - 1)^2 < 1e-12 }
     END { exit !f }' "$TMP/out"; echo $?) "DeepEP normal dispatch, one node: the ranks a token reaches, by hand"
# Two nodes, low latency: a copy per expert, 8/16 of them to the other node over the NIC
# (50 GB/s), 128 tokens x 8 x 1024 bf16 values x 1/2, slower than the NVLink share
ok $(awk -F, -v n="$nic" '$6 == "deepep_ll_combine" {
       want = 128 * 8 * 8 / 16 * 1024 * 2 / (n * 1e9) * 1e3; f = ($18 / want - 1)^2 < 1e-12 }
     END { exit !f }' "$TMP/out"; echo $?) "DeepEP low-latency combine over two nodes: a copy per expert, NIC-bound, by hand"

echo "sglang,x,$dev,normal,deepep,70000,1024,100,2,8,4,30,2,8,50,0" \
  >>"$A/h100_sxm/comm/sglang/x/wideep_deepep_normal_perf.csv"
expect_fail 2 "wideep_deepep_normal_perf.csv:4: node_num 70000: 560000 GPUs, not an expert-parallel group" \
  "a DeepEP row of an absurd node count: refused with file:line" -- \
  eval --data "$TMP/aic" --table deepep --predictor roofline
sed -i '$d' "$A/h100_sxm/comm/sglang/x/wideep_deepep_normal_perf.csv"
echo "sglang,x,$dev,ll,deepep,1,1024,128,9,8,40,1,20,1" >>"$A/h100_sxm/comm/sglang/x/wideep_deepep_ll_perf.csv"
expect_fail 2 "wideep_deepep_ll_perf.csv:3: num_topk 9 above num_experts 8" \
  "a DeepEP row with more experts per token than experts: refused with file:line" -- \
  eval --data "$TMP/aic" --table deepep --predictor roofline

# tile-mlp's DeepEP network on a shape of aiconfigurator's H100 table (sglang 0.5.12: 4096
# tokens a rank, 7168 wide, top 8 of 256 experts, 8 GPUs, 20 SMs: 492.2 us)
d=$(run_pm kernel --op deepep --coll dispatch --tokens 4096 --hidden 7168 --experts 256 --top-k 8 \
      --ranks 8 --sms 20 --gpu h100-sxm --predictor tile-mlp --format csv
    awk -F, 'NR == 2 && $9 == "" { print $5 }' "$TMP/out")
ok $(awk -v t="$d" 'BEGIN { exit !(t != "" && (t / 0.4922 - 1)^2 < 0.01) }'; echo $?) \
  "kernel --op deepep: the network's normal dispatch within 10 % of the measured 0.4922 ms ($d ms)"
expect_fail 2 "--sms: the low-latency kernels take the SMs they need" \
  "kernel --op deepep --ll --sms: refused" -- \
  kernel --op deepep --coll dispatch --ll --sms 4 --tokens 8 --hidden 1024 --experts 8 --top-k 2 --ranks 8

# Group-limited routing (DeepSeek-V3: 256 experts in 8 groups, a token's top 8 in 4 of them)
# over 8 nodes of 8 H800, a group a node: another node holds one of the token's groups with
# chance 1 - C(7, 4) / C(8, 4) = 1/2, and then one of its 8 experts among the 4 groups' 128
# falls in that node's 32 with chance 1 - C(96, 8) / C(128, 8); the roofline's bound is those
# fp8 copies over the GPU's NIC
nic=$(gpu_key h800-sxm nic_gbps)
run_pm kernel --op deepep --coll dispatch --tokens 4096 --hidden 7168 --experts 256 --top-k 8 \
  --ranks 64 --groups 8 --group-top-k 4 --gpu h800 --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && awk -F, -v n="$nic" 'NR == 2 { none = 1; for (i = 0; i < 8; i++) none *= (96 - i) / (128 - i)
       want = 4096 * 7 * 0.5 * (1 - none) * 7168 * (1 + 4 / 128) / (n * 1e9) * 1e3
       f = ($5 / want - 1)^2 < 1e-12 } END { exit !f }' "$TMP/out"; echo $?) \
  "DeepEP across 8 nodes with group-limited routing: the nodes a token reaches, by hand"
expect_fail 2 "--groups 8 --group-top-k 9: give both, g of G groups" \
  "kernel --op deepep: more groups chosen than there are, refused" -- \
  kernel --op deepep --coll dispatch --tokens 8 --hidden 1024 --experts 256 --top-k 8 --ranks 64 \
  --groups 8 --group-top-k 9
