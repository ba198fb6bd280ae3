#!/bin/sh
# t1040-readers-coverage.sh: the modern readers beyond aiconfigurator's GEMMs (vidur layers and collectives, aiter's tuned GEMMs, decode attention with windows, MoE layouts, single tables) read as hand-derived shapes, their refusals with file:line, NeuSight tables' refusals, and perfmod train's tensor-core groups and refusals.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 63

# Columns of eval --per-op --format csv on the modern tables:
# 1 predictor 2 file 3 line 4 table 5 gpu 6 class 7 dtype 8 b 9 m 10 n 11 k 12 h 13 kv_heads
# 14 ranks 15 bytes 16 measurements 17 measured_ms 18 predicted_ms 19 error_pct
perop () { run_pm eval --predictor roofline --per-op --format csv "$@"; }
# same FILE EXPECTED: the sorted lines of FILE are EXPECTED's (never both empty: EXPECTED is not)
same () { [ -s "$2" ] && sort "$1" >"$1.s" && sort "$2" | cmp -s "$1.s" -; }
# close A B: A is within 1e-6 of B, both numbers, B > 0
close () { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b > 0 && a / b - 1 < 1e-6 && a / b - 1 > -1e-6) }'; }

# GPU figures from gpus.d: memory GB/s and link GB/s
gpucol () {  # gpucol NAME COLUMN
  "$PERFMOD" gpus | awk -v g="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $1 == g { v = $col[c]; if (c == "link/nic") { split(v, l, "/"); v = l[1] } print v }'
}
a100_bw=$(gpucol a100-sxm-80gb mem_gbps) a100_link=$(gpucol a100-sxm-80gb link/nic)
mi300x_bw=$(gpucol mi300x mem_gbps) h100_bw=$(gpucol NVIDIA_H100_80GB_HBM3 mem_gbps)

D="$TMP/md"
dev="NVIDIA H100 80GB HBM3"

# --- vidur collectives: one row per rank, runs across nodes left out ---
NW="$D/vidur/data/profiling/network"
mkdir -p "$NW/a100_dgx" "$NW/h100_dgx"
{ echo ",time_stats.all_reduce.min,time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node,max_devices_per_node"
  echo "0,0.01,0.040,0,2,1024,all_reduce,8,8"
  echo "1,0.01,0.060,1,2,1024,all_reduce,8,8"
  echo "2,0.01,0.050,0,4,2048,all_reduce,8,8"
  echo "3,0.01,0.070,1,4,2048,all_reduce,8,8"
  echo "4,0.01,0.090,2,4,2048,all_reduce,8,8"
  echo "5,0.01,0.500,0,16,2048,all_reduce,8,8"; } >"$NW/a100_dgx/all_reduce.csv"
{ echo ",time_stats.send_recv.median,rank,num_workers,size,collective,devices_per_node"
  echo "0,0.030,0,2,4096,send_recv,1"
  echo "1,0.020,0,2,8192,send_recv,2"; } >"$NW/a100_dgx/send_recv.csv"
{ echo ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node"
  echo "0,0.025,0,8,65536,all_reduce,8"; } >"$NW/h100_dgx/all_reduce.csv"
echo "not a table" >"$NW/README.md"

# --- vidur layers: mlp.csv, two rows (tp 2 gated GQA, tp 1 ungated MHA with an empty cell) ---
VC="$D/vidur/data/profiling/compute/a100/org/model"
mkdir -p "$VC"
ops="emb input_layernorm attn_pre_proj attn_rope attn_post_proj post_attention_layernorm mlp_up_proj mlp_act mlp_down_proj add"
{ h=""; for o in $ops; do h="${h}time_stats.$o.median,"; done
  echo "${h}n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers"
  echo "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,8,2,512,1024,32000,True,64,2"
  echo "0.1,,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,8,8,512,1024,32000,False,128,1"; } >"$VC/mlp.csv"

# --- aiter: tuned GEMMs in us; gfx942/304 (MI300X) and gfx942/80 (MI308X) kept, an unknown chip
# and a placeholder time left out ---
AI="$D/aiter/aiter/configs"
mkdir -p "$AI"
{ echo "gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,err_ratio,tflops,bw"
  echo "gfx942,304,16,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,0,0,12.5,k,0.0,1,1"
  echo "gfx942,304,32,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,0,0,0,k,0.0,1,1"
  echo "gfx942,304,64,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,0,0,inf,k,0.0,1,1"
  echo "gfx942,304,128,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,0,0,Inf,k,0.0,1,1"
  echo "gfx942,304,256,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,0,0,nan,k,0.0,1,1"
  echo "gfx1250,96,16,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,triton,0,0,9.0,k,0.0,1,1"
  echo "gfx1250,96,32,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,triton,0,0,9.5,k,0.0,1,1"
  echo "gfx942,80,16,1024,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,0,0,30.0,k,0.0,1,1"; } \
  >"$AI/bf16_tuned_gemm.csv"
{ echo "gfx,cu_num,B,M,N,K,kernelId,splitK,us,kernelName,tflops,bw,errRatio"
  echo "gfx942,304,16,32,1280,8192,29,0,123.5,x,1,1,0"; } >"$AI/bf16_tuned_batched_gemm.csv"

# --- decode attention: the KV cache's dtype, isl + step keys, beam search and int8 left out,
# a sliding window ---
GA="$D/aiconfigurator/h100_sxm/attention/a/1"
mkdir -p "$GA"
{ echo framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,beam_width,attn_dtype,kv_cache_dtype,step,latency
  echo "A,1,$dev,generation_attention,x,4,1000,32,8,128,0,1,bfloat16,fp8,24,0.05"
  echo "A,1,$dev,generation_attention,x,4,1000,32,8,128,0,2,bfloat16,fp8,24,0.05"
  echo "A,1,$dev,generation_attention,x,4,4096,32,8,128,1024,1,bfloat16,bfloat16,0,0.07"
  echo "A,1,$dev,generation_attention,x,4,4096,32,8,128,0,1,bfloat16,int8,0,0.07"; } \
  >"$GA/generation_attention_perf.csv"

# --- MoE: one even layout kept; experts not divisible by ep, top-k above the experts and an
# intermediate width not divisible by tp left out ---
MO="$D/aiconfigurator/h100_sxm/moe/a/1"
mkdir -p "$MO"
{ echo framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency
  echo "A,1,$dev,moe,x,bfloat16,64,256,128,2,8,1,2,balanced,0.01"
  echo "A,1,$dev,moe,x,bfloat16,64,256,128,2,8,1,3,balanced,0.01"
  echo "A,1,$dev,moe,x,bfloat16,64,256,128,10,8,1,1,balanced,0.01"
  echo "A,1,$dev,moe,x,bfloat16,64,256,100,2,8,3,1,balanced,0.01"; } >"$MO/moe_perf.csv"

# 1-3: vidur collectives
perop --data "$D" --table vidur_comm
awk -F, 'NR > 1 { printf "%s,%s,%s,%s,%g\n", $6, $14, $15, $16, $17 }' "$TMP/out" >"$TMP/got"
printf '%s\n' "all_reduce,2,2048,2,0.05" "all_reduce,4,4096,3,0.07" "send_recv,2,16384,1,0.02" \
  "all_reduce,8,131072,1,0.025" >"$TMP/want"
ok $([ "$rc" -eq 0 ] && same "$TMP/got" "$TMP/want"; echo $?) \
  "vidur collectives: fp16 elements as bytes, the median over ranks (even and odd), runs across nodes left out"
ok $(awk -F, -v l="$a100_link" 'NR > 1 && $5 == "a100-sxm-80gb" { n++; r = $14
       t = ($6 == "all_reduce" ? 2 * (r - 1) / r * $15 : $15) / (l * 1e9) * 1e3
       d = $18 / t - 1; if (d > 1e-6 || d < -1e-6) bad++ } END { exit !(n == 3 && !bad) }' "$TMP/out"; echo $?) \
  "roofline over the link: a ring all-reduce moves 2(n-1)/n of the buffer, send_recv the buffer"
perop --data "$D" --table vidur_comm --gpu h100
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 { n++; if ($5 != "NVIDIA_H100_80GB_HBM3" || $15 != 131072) bad++ }
       END { exit !(n == 1 && !bad) }' "$TMP/out"; echo $?) \
  "--gpu h100: the GPU the folder name (h100_dgx) gives is kept, a100_dgx's tables are not read"

# 4-8: vidur layers
perop --data "$D" --table vidur_layer
awk -F, '$6 == "FC" { printf "%s,%s,%s,%s,%g\n", $8, $9, $10, $11, $17 }' "$TMP/out" >"$TMP/got"
# tokens 64, tp 2: head_dim 64, QKV (8 + 2*2) * 64 / 2 = 384, O 8*64/2 = 256 -> 512,
# gated up 2 * 1024 / 2 = 1024, down 1024 / 2 = 512 -> 512; tokens 128, tp 1, MHA, ungated:
# QKV (8 + 16) * 64 = 1536, up 1024, down 1024 -> 512
printf '%s\n' 1,64,512,384,0.3 1,64,256,512,0.5 1,64,512,1024,0.7 1,64,512,512,0.9 \
  1,128,512,1536,0.3 1,128,512,512,0.5 1,128,512,1024,0.7 1,128,1024,512,0.9 >"$TMP/want"
ok $([ "$rc" -eq 0 ] && same "$TMP/got" "$TMP/want"; echo $?) \
  "vidur layer projections: Megatron's shards of QKV, O, gated up and down for tp 2 and 1"
awk -F, 'NR > 1 && $6 != "FC" { printf "%s,%s,%s,%s,%g\n", $6, $8, $12, $15, $17 }' "$TMP/out" >"$TMP/got"
# rope over (heads + kv heads) x head_dim / tp, the activation over the expanded width / tp,
# the embedding as a gather of 2 x 2 bytes per element; row 2's empty layernorm cell left out
printf '%s\n' EW,64,320,0,0.4 EW,64,512,0,0.8 EW,64,512,0,1 EW,128,1024,0,0.4 EW,128,1024,0,0.8 \
  EW,128,512,0,1 LN,64,512,0,0.2 LN,64,512,0,0.6 LN,128,512,0,0.6 memory,64,512,131072,0.1 \
  memory,128,512,262144,0.1 >"$TMP/want"
ok $(same "$TMP/got" "$TMP/want"; echo $?) \
  "vidur layer vector ops: rope, act, add, norms and the embedding at their widths; an empty cell is no row"
ok $(awk -F, -v bw="$a100_bw" '$6 == "memory" || $6 == "LN" { n++; t = 2 * 2 * $8 * $12 / (bw * 1e9) * 1e3
       d = $18 / t - 1; if (d > 1e-6 || d < -1e-6) bad++ } END { exit !(n == 5 && !bad) }' "$TMP/out"; echo $?) \
  "roofline: a norm and the embedding gather read and write 2 bytes per element at A100's bandwidth"
perop --data "$D" --dtype fp16
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 { n++; if ($7 != "fp16" || $4 !~ /^vidur_/) bad++ }
       END { exit !(n == 23 && !bad) }' "$TMP/out"; echo $?) \
  "--dtype fp16 over every table: vidur's 23 fp16 rows, no bf16 or fp8 row"
perop --data "$D" --dtype fp32
ok $([ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] &&
     grep -q "no rows to evaluate (--dtype fp32, --gpu any, --table any)" "$TMP/err"; echo $?) \
  "--dtype fp32 matches no modern row: nothing evaluated is a failure (exit 1), said, no table"

# 9-11: aiter
perop --data "$D" --table aiter_gemm
awk -F, 'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%g\n", $5, $6, $8, $9, $10, $11, $17 }' "$TMP/out" >"$TMP/got"
# M, N, K -> perfmod's (m, k = N, n = K); us -> ms
printf '%s\n' mi300x,FC,1,16,4096,1024,0.0125 mi300x,BMM,16,32,8192,1280,0.1235 mi308x,FC,1,16,4096,1024,0.03 >"$TMP/want"
ok $([ "$rc" -eq 0 ] && same "$TMP/got" "$TMP/want"; echo $?) \
  "aiter: GEMMs and batched GEMMs on gfx942/304 and /80 in us; an unknown chip and us = 0, inf, Inf or nan left out"
ok $(awk -F, -v bw="$mi300x_bw" '$5 == "mi300x" && $6 == "FC" { n++; t = 2 * (16 * 4096 + 4096 * 1024 + 16 * 1024) / (bw * 1e9) * 1e3
       d = $18 / t - 1; if (d > 1e-6 || d < -1e-6) bad++ } END { exit !(n == 1 && !bad) }' "$TMP/out"; echo $?) \
  "roofline: aiter's 16 x 4096 x 1024 bf16 GEMM is memory bound on MI300X"
ok $([ "$rc" -eq 0 ] && [ "$(grep -c "bf16_tuned_gemm.csv: 2 rows of a device gpus.d does not know left out (the first, line 7: 'gfx1250/96'; a gpus.d alias reads them)" "$TMP/err")" -eq 1 ] &&
     ! grep -q 'bf16_tuned_gemm.csv:8:' "$TMP/err"; echo $?) \
  "rows of a chip gpus.d does not know: how many and the first said once on stderr, without --verbose"

# 12-13: decode attention
perop --data "$D" --table generation_attention
awk -F, 'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%s,%s,%g\n", $6, $7, $8, $9, $10, $11, $12, $13, $17 }' "$TMP/out" >"$TMP/got"
printf '%s\n' attn-decode,fp8,4,1,1024,128,32,8,0.05 attn-decode,bf16,4,1,4096,128,32,8,0.07 >"$TMP/want"
ok $([ "$rc" -eq 0 ] && same "$TMP/got" "$TMP/want"; echo $?) \
  "decode attention: the KV cache's dtype, one query against isl + step keys; beam 2 and int8 KV left out"
# window 1024 of 4096 cached keys: K and V of 1024 tokens (4 x 8 heads x 128 x 2 bytes each),
# plus q read and o written (4 x 32 x 128 x 2 bytes each)
ok $(awk -F, -v bw="$h100_bw" '$7 == "bf16" { n++; t = (2 * 4 * 8 * 1024 * 128 * 2 + 2 * 4 * 32 * 128 * 2) / (bw * 1e9) * 1e3
       d = $18 / t - 1; if (d > 1e-6 || d < -1e-6) bad++ } END { exit !(n == 1 && !bad) }' "$TMP/out"; echo $?) \
  "roofline: a decode step with a 1024-token window reads the window's KV, not the 4096 cached"

# 14: MoE layouts
perop --data "$D" --table moe
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 { n++; if ($6 != "moe") bad++
         if ($8 != 8 || $9 != 64 || $10 != 256 || $11 != 128 || $12 != 4 || $14 != 2 || $20 != 2) bad++ }
       END { exit !(n == 1 && !bad) }' "$TMP/out"; echo $?) \
  "moe: 8 experts over ep 2 kept (experts, tokens, hidden, inter, 4 on the rank, ep, top-k); uneven layouts left out"

# 15-17: a path that names the GPU, a single table as --data
P="$TMP/path/aiconfigurator/h100_sxm/gemm"
mkdir -p "$P"
{ echo framework,gemm_dtype,m,n,k,latency; echo "A,bfloat16,16,32,64,1.5"; } >"$P/gemm_perf.csv"
perop --data "$TMP/path"
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 { n++; if ($5 != "h100-sxm" || $9 != 16 || $10 != 64 || $11 != 32 || $17 != 1.5) bad++ }
       END { exit !(n == 1 && !bad) }' "$TMP/out"; echo $?) \
  "a GEMM table without a device column: the GPU from its path (h100_sxm), m x k by n read as (m, k, n)"
S="$TMP/single.d/h100_sxm"
mkdir -p "$S"
{ echo framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
  echo "A,1,$dev,gemm,x,bfloat16,16,16,16,1"
  echo "A,1,$dev,gemm,x,bfloat16,16,16,16,3"
  echo "A,1,$dev,gemm,x,fp16,16,16,16,2"
  echo "A,1,$dev,gemm,x,int8_wo,16,16,16,2"; } >"$S/gemm_perf.csv"
perop --data "$S/gemm_perf.csv"
awk -F, 'NR > 1 { printf "%s,%s,%s,%g\n", $3, $7, $16, $17 }' "$TMP/out" >"$TMP/got"
printf '%s\n' 2,bf16,2,2 4,fp16,1,2 >"$TMP/want"
ok $([ "$rc" -eq 0 ] && same "$TMP/got" "$TMP/want"; echo $?) \
  "--data one table: read alone; two measurements of a shape give their mean (1, 3 -> 2), int8 weight-only left out"
perop --data "$S/gemm_perf.csv" --table nccl
ok $([ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -q "single.d/h100_sxm/gemm_perf.csv: no rows to evaluate (.*--table as given)" "$TMP/err"; echo $?) \
  "--data one GEMM table with --table nccl: known, not read, no rows: exit 1"

# 18-33: refusals, exit 2, file:line, nothing on stdout
bad () {  # bad SUBPATH: a fresh data folder $TMP/bad/N, the table at SUBPATH under it
  badn=$((${badn:-0} + 1)); B="$TMP/bad/$badn"; mkdir -p "$B/$(dirname "$1")"; BT="$B/$1"
}
H=framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
bad h100_sxm/gemm_perf.csv
{ echo $H; echo "A,1,$dev,gemm,x,bfloat16,16,16,16,0"; } >"$BT"
expect_fail 2 "gemm_perf.csv:2: latency '0' is not positive" "a zero latency is refused naming file:line" -- \
  eval --data "$B" --predictor roofline
bad x/gemm/gemm_perf.csv
{ echo framework,gemm_dtype,m,n,k,latency; echo "A,bfloat16,16,16,16,1"; } >"$BT"
expect_fail 2 "x/gemm/gemm_perf.csv: no device column and no GPU in gpus.d named by the path" \
  "no device column and no GPU in the path: refused" -- eval --data "$B" --predictor roofline
bad vidur/data/profiling/network/foo_dgx/all_reduce.csv
cp "$NW/a100_dgx/all_reduce.csv" "$BT"
expect_fail 2 "foo_dgx/all_reduce.csv: no device column and no GPU in gpus.d named by the path" \
  "vidur collectives under a folder that names no GPU: refused" -- eval --data "$B" --predictor roofline
bad vidur/data/profiling/network/a100_dgx/all_reduce.csv
printf 'num_workers,size,collective,devices_per_node,time_stats.all_reduce.mean\n2,4,all_reduce,8,0.1\n' >"$BT"
expect_fail 2 "all_reduce.csv:1: no 'time_stats.\*.median' column" "vidur collectives without a median column: refused" -- \
  eval --data "$B" --predictor roofline
bad vidur/data/profiling/compute/a100/o/m/mlp.csv
sed '1s/n_head,//; 2,$s/,8,/,/' "$VC/mlp.csv" >"$BT"
expect_fail 2 "mlp.csv:1: no 'n_head' column" "a vidur layer table without n_head: refused" -- \
  eval --data "$B" --predictor roofline
bad vidur/data/profiling/compute/a100/o/m/mlp.csv
sed 's/,0\.5,/,-0.5,/' "$VC/mlp.csv" >"$BT"
run_pm eval --data "$B" --predictor roofline
ok $([ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "mlp.csv:2: latency '-0.5' is not positive" "$TMP/err" &&
     grep -q "mlp.csv:3: latency '-0.5' is not positive" "$TMP/err" && grep -q "mlp.csv: 2 bad rows: the file is refused" "$TMP/err"; echo $?) \
  "a vidur layer's negative op time: each row named, the file refused"
bad h100_sxm/comm/nccl/nccl_perf.csv
printf 'nccl_dtype,num_gpus,message_size,kernel_source,op_name,latency\nint8,8,64,NCCL,all_reduce,0.05\nhalf,1,1024,NCCL,all_reduce,0.05\n' >"$BT"
expect_fail 2 "nccl_perf.csv:3: column 'num_gpus': '1' is not an integer >= 2" "NCCL on one GPU: refused (the int8 row before it left out)" -- \
  eval --data "$B" --predictor roofline
bad h100_sxm/generation_attention_perf.csv
{ echo framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,beam_width,attn_dtype,kv_cache_dtype,step,latency
  echo "A,1,$dev,g,x,4,1000,32,8,128,-1,1,bfloat16,fp8,24,0.05"; } >"$BT"
expect_fail 2 "generation_attention_perf.csv:2: column 'window_size': '-1' is not an integer >= 0" \
  "a negative attention window: refused" -- eval --data "$B" --predictor roofline
bad llmcompass/matmul_A100.csv
printf '64, 128, 128\n' >"$BT"
expect_fail 2 "matmul_A100.csv:1: 3 fields, expected M, N, K, time" "LLMCompass: a row of three fields is refused" -- \
  eval --data "$B" --predictor roofline
bad llmcompass/matmul_XYZ.csv
printf '64, 128, 128, 0.19ms, 1Tflops\n' >"$BT"
expect_fail 2 "matmul_XYZ.csv: no device column and no GPU in gpus.d named by the path" \
  "LLMCompass: a file name that names no GPU is refused" -- eval --data "$B" --predictor roofline
bad aiter/bf16_tuned_gemm.csv
printf 'gfx,cu_num,M,N,K,time\ngfx942,304,1,2,3,4\n' >"$BT"
expect_fail 2 "bf16_tuned_gemm.csv:1: no 'us' column" "aiter without a 'us' column: refused" -- eval --data "$B" --predictor roofline
bad aiter/bf16_tuned_batched_gemm.csv
printf 'gfx,cu_num,B,M,N,K,us\ngfx942,304,0,1,2,3,4\n' >"$BT"
expect_fail 2 "bf16_tuned_batched_gemm.csv:2: column 'B': '0' is not an integer >= 1" "aiter: a batch of 0 is refused" -- \
  eval --data "$B" --predictor roofline
bad h100_sxm/moe_perf.csv
{ echo framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency
  echo "A,1,$dev,moe,x,bfloat16,0,256,128,2,8,1,1,balanced,0.01"; } >"$BT"
expect_fail 2 "moe_perf.csv:2: column 'num_tokens': '0' is not an integer >= 1" "moe: zero tokens refused" -- \
  eval --data "$B" --predictor roofline
bad h100_sxm/gemm/gemm_perf.csv
: >"$BT"
expect_fail 2 "gemm_perf.csv: empty file \\(no header\\)" "an empty table is refused" -- eval --data "$B" --predictor roofline
bad h100_sxm/gemm_perf.csv
{ echo $H; i=0; while [ $i -lt 25 ]; do echo "A,1,$dev,gemm,x,bfloat16,16,16,16,x$i"; i=$((i + 1)); done; } >"$BT"
run_pm eval --data "$B" --predictor roofline
ok $([ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(grep -c "column 'latency': 'x[0-9]*' is not a number" "$TMP/err")" -eq 20 ] &&
     grep -q "gemm_perf.csv:21: column 'latency': 'x19'" "$TMP/err" && grep -q "gemm_perf.csv: 20 bad rows: the file is refused" "$TMP/err"; echo $?) \
  "25 bad rows: the reader stops at 20, naming each"
bad h100_sxm/gemm_perf.csv
{ echo $H; echo "A,1,$dev,gemm,x,bfloat16,16,16,16,1,extra"; echo "A,1,$dev,gemm,x,bfloat16,16,16"
  echo "A,1,$dev,gemm,x,bfloat16,-1,16,16,1"; echo "A,1,$dev,gemm,x,bfloat16,16,16,16,2"; } >"$BT"
run_pm eval --data "$BT" --predictor roofline
ok $([ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "gemm_perf.csv:2: 11 fields, the header has 10" "$TMP/err" &&
     grep -q "gemm_perf.csv:3: 8 fields, the header has 10" "$TMP/err" && grep -q "gemm_perf.csv:4: column 'm': '-1'" "$TMP/err" &&
     grep -q "gemm_perf.csv: 3 bad rows" "$TMP/err"; echo $?) \
  "--data one table: rows of the wrong width are named and reading goes on to the next bad row"

# 34-41: one folder of tables whose every row is bad in another column: each row named with
# its column, every table refused, in one run
W="$TMP/sweep"
mkdir -p "$W/h100_sxm" "$W/vidur/data/profiling/network/a100_dgx" "$W/vidur/data/profiling/compute/a100/o/m" \
  "$W/aiter" "$W/llmcompass"
{ echo framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step,latency
  for r in "0,64,8,8,64,1" "1,0,8,8,64,1" "1,64,0,8,64,1" "1,64,8,0,64,1" "1,64,8,8,0,1" "1,64,8,8,64,0"; do
    echo "A,1,$dev,c,x,$r,bfloat16,bfloat16,0,0.1"; done
  echo "A,1,$dev,c,x,1,64,8,8,64,1,bfloat16,bfloat16,-1,0.1"
  echo "A,1,$dev,c,x,1,64,8,8,64,1,bfloat16,bfloat16,0,x"; } >"$W/h100_sxm/context_attention_perf.csv"
{ echo framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency
  for r in "0,128,2,8,1,1" "256,0,2,8,1,1" "256,128,0,8,1,1" "256,128,2,0,1,1" "256,128,2,8,0,1" "256,128,2,8,1,0"; do
    echo "A,1,$dev,moe,x,bfloat16,64,$r,balanced,0.01"; done
  echo "A,1,$dev,moe,x,bfloat16,64,256,128,2,8,1,1,balanced,-1"; } >"$W/h100_sxm/moe_perf.csv"
{ echo framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
  for r in "16,-1,16" "16,16,-1" "16,0,16" "16,16,0"; do echo "A,1,$dev,gemm,x,fp8,$r,0.1"; done; } >"$W/h100_sxm/gemm_perf.csv"
{ echo nccl_dtype,num_gpus,message_size,kernel_source,op_name,latency
  echo "half,8,0,NCCL,all_reduce,0.05"; echo "half,8,64,NCCL,all_reduce,x"; } >"$W/h100_sxm/nccl_perf.csv"
{ echo ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node"
  echo "0,0.01,0,1,64,all_reduce,8"; echo "1,0.01,0,2,0,all_reduce,8"; echo "2,0.01,0,2,64,all_reduce,0"
  echo "3,x,0,2,64,all_reduce,8"; } >"$W/vidur/data/profiling/network/a100_dgx/all_reduce.csv"
{ sed -n 1p "$VC/mlp.csv"
  for r in "0,2,512,1024" "8,0,512,1024" "8,2,0,1024" "8,2,512,0"; do echo "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,$r,32000,True,64,1"; done
  echo "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,8,2,512,1024,32000,True,0,1"
  echo "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,8,2,512,1024,32000,True,64,0"; } >"$W/vidur/data/profiling/compute/a100/o/m/mlp.csv"
{ echo gfx,cu_num,M,N,K,us
  echo "gfx942,304,16,16,16,x"; echo "gfx942,304,0,16,16,1"; echo "gfx942,304,16,0,16,1"; echo "gfx942,304,16,16,0,1"; } \
  >"$W/aiter/bf16_tuned_gemm.csv"
printf '%s\n' "64, 128, 128, 0.19ms, 1Tflops" "0, 128, 128, 0.19ms, 1" "64, 0, 128, 0.19ms, 1" "64, 128, 0, 0.19ms, 1" \
  "64, 128, 128, fast, 1" "64, 128, 128, 0ms, 1" >"$W/llmcompass/matmul_A100.csv"
echo x >"$W/aiter/bf16_tuned_gemm.csv.orig"
echo x >"$W/llmcompass/matmul_A100.txt"
run_pm eval --data "$W" --predictor roofline
# sweep_ok FILE DESCRIPTION LINE:MESSAGE...: each message at FILE:LINE, the file refused
sweep_ok () {
  f=$1 what=$2 nbad=0
  shift 2
  sw=0
  [ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] || sw=1
  for m; do
    nbad=$((nbad + 1))
    grep -Fq -- "$f:${m%%:*}: ${m#*:}" "$TMP/err" || { sw=1; diag "missing: $f:$m"; }
  done
  grep -Fq -- "$f: $nbad bad rows: the file is refused" "$TMP/err" || sw=1
  ok $sw "$what"
}
sweep_ok context_attention_perf.csv "attention: batch, isl, heads, kv heads, head_dim, beam, step and latency each refused at its row" \
  "2:column 'batch_size': '0' is not an integer >= 1" "3:column 'isl': '0' is not an integer >= 1" \
  "4:column 'num_heads': '0' is not an integer >= 1" "5:column 'num_key_value_heads': '0' is not an integer >= 1" \
  "6:column 'head_dim': '0' is not an integer >= 1" "7:column 'beam_width': '0' is not an integer >= 1" \
  "8:column 'step': '-1' is not an integer >= 0" "9:column 'latency': 'x' is not a number"
sweep_ok moe_perf.csv "moe: hidden, inter, top-k, experts, tp, ep and latency each refused at its row" \
  "2:column 'hidden_size': '0' is not an integer >= 1" "3:column 'inter_size': '0' is not an integer >= 1" \
  "4:column 'topk': '0' is not an integer >= 1" "5:column 'num_experts': '0' is not an integer >= 1" \
  "6:column 'moe_tp_size': '0' is not an integer >= 1" "7:column 'moe_ep_size': '0' is not an integer >= 1" \
  "8:latency '-1' is not positive"
sweep_ok gemm_perf.csv "gemm: a negative n or k refused; n = 0 and k = 0 rows left out, not refused" \
  "2:column 'n': '-1' is not an integer >= 0" "3:column 'k': '-1' is not an integer >= 0"
sweep_ok nccl_perf.csv "NCCL: an empty message and a latency that is no number refused" \
  "2:column 'message_size': '0' is not an integer >= 1" "3:column 'latency': 'x' is not a number"
sweep_ok all_reduce.csv "vidur collectives: one worker, size 0, no devices per node and a bad median each refused" \
  "2:column 'num_workers': '1' is not an integer >= 2" "3:column 'size': '0' is not an integer >= 1" \
  "4:column 'devices_per_node': '0' is not an integer >= 1" "5:column 'latency': 'x' is not a number"
sweep_ok mlp.csv "vidur layers: heads, kv heads, width, expanded width, tokens and tp each refused at its row" \
  "2:column 'n_head': '0' is not an integer >= 1" "3:column 'n_kv_head': '0' is not an integer >= 1" \
  "4:column 'n_embd': '0' is not an integer >= 1" "5:column 'n_expanded_embd': '0' is not an integer >= 1" \
  "6:column 'num_tokens': '0' is not an integer >= 1" "7:column 'num_tensor_parallel_workers': '0' is not an integer >= 1"
sweep_ok bf16_tuned_gemm.csv "aiter: a time that is no number and zero M, N, K each refused; other file names not read" \
  "2:column 'us': 'x' is not a number" "3:column 'M': '0' is not an integer >= 1" \
  "4:column 'N': '0' is not an integer >= 1" "5:column 'K': '0' is not an integer >= 1"
sweep_ok matmul_A100.csv "LLMCompass: zero M, N, K and times that are no positive ms each refused after a good row" \
  "2:column 'M': '0' is not an integer >= 1" "3:column 'N': '0' is not an integer >= 1" \
  "4:column 'K': '0' is not an integer >= 1" "5:time 'fast' is not a positive number of ms" \
  "6:time '0ms' is not a positive number of ms"

# 42-45: NeuSight's kernel tables (read when no modern table is found)
: >"$TMP/empty.csv"
expect_fail 2 "empty.csv: empty file \\(no header\\)" "a NeuSight kernel table that is empty is refused" -- \
  eval --data "$TMP/empty.csv" --predictor roofline
printf 'OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,H\nlinear,0.1,Tesla T4,k,1,1,1,4,4\n' >"$TMP/nomnk.csv"
expect_fail 2 "nomnk.csv:2: a linear row needs M, N and K columns" "a NeuSight linear row in a table without M, N, K: refused" -- \
  eval --data "$TMP/nomnk.csv" --predictor roofline
printf 'OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K\nadd,0.1,Tesla T4,k,1,1,1,4,4,4,4\n' >"$TMP/noh.csv"
expect_fail 2 "noh.csv:2: a vector row needs an H column" "a NeuSight vector row in a table without H: refused" -- \
  eval --data "$TMP/noh.csv" --predictor roofline
mkdir -p "$TMP/nothing"
echo x >"$TMP/nothing/notes.txt"
expect_fail 2 "nothing: no kernel CSVs \\(bmm.csv" "a folder with no kernel table of either kind: refused" -- \
  eval --data "$TMP/nothing" --predictor roofline

# 46-51: train's refusals
NS="$TMP/ns"
mkdir -p "$NS"
awk -v dir="$NS" 'BEGIN {
  mm = "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K"
  vv = "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,H"
  print mm > (dir "/bmm.csv"); print mm > (dir "/linear.csv")
  print vv > (dir "/elem.csv"); print vv > (dir "/ln.csv"); print vv > (dir "/softmax.csv")
  dev = "Tesla P4"; coef = 1e-12
  for (j = 1; j <= 20; j++) {
    b = j; m = 64 * j; k = 32 + 8 * j; nn = 128
    printf "bmm,%.17g,%s,ampere_sgemm_128x64_nn,1,1,%d,%d,%d,%d,%d\n", (coef * 2 * b * m * nn * k + 1e-5) * 1e3, dev, b, b, m, nn, k > (dir "/bmm.csv")
    printf "linear,%.17g,%s,ampere_sgemm_64x64_tn,1,1,1,1,%d,%d,%d\n", (coef * 2 * m * nn * k + 1e-5) * 1e3, dev, m, nn, k > (dir "/linear.csv")
    printf "add,%.17g,%s,add_kernel,%d,1,1,%d,512\n", (coef * 1000 * j * 512 * 12 + 1e-5) * 1e3, dev, 100 * j, 1000 * j > (dir "/elem.csv")
    printf "ln,%.17g,%s,ln_kernel,%d,1,1,%d,512\n", (coef * 1000 * j * 512 * 8 + 1e-5) * 1e3, dev, 1000 * j, 1000 * j > (dir "/ln.csv")
    printf "softmax,%.17g,%s,softmax_kernel,%d,1,1,%d,512\n", (coef * 1000 * j * 512 * 8 + 1e-5) * 1e3, dev, 1000 * j, 1000 * j > (dir "/softmax.csv")
  } }'
expect_fail 2 "--data .*md: the bf16/fp16/fp8 tables train tile-mlp's tensor-core networks.*roofline learns NeuSight's fp32 kernels only" \
  "train roofline on the modern tables: refused" -- train --predictor roofline --data "$D" --out "$TMP/r.params"
expect_fail 2 "--split and --dtype choose rows of the modern tables; .*ns is NeuSight's fp32 data" \
  "train --split on NeuSight's tables: refused" -- train --predictor linreg --data "$NS" --split train --out "$TMP/r.params"
expect_fail 2 "--in-dist: 2 to 16 training GPUs, not 1" "train --in-dist with one GPU: refused" -- \
  train --predictor linreg --data "$NS" --in-dist p4 --out "$TMP/r.params"
expect_fail 2 "--in-dist 'bogus': no such GPU" "train --in-dist naming an unknown GPU: refused" -- \
  train --predictor linreg --data "$NS" --in-dist p4,bogus --out "$TMP/r.params"
run_pm train --predictor linreg --data "$NS" --in-dist p4,Tesla_P4 --out "$TMP/r.params"
ok $([ "$rc" -ne 0 ] && [ ! -s "$TMP/out" ] && [ ! -e "$TMP/r.params" ] &&
     grep -q "linreg: bmm: the training GPUs' bandwidths do not differ" "$TMP/err"; echo $?) \
  "linreg: the same GPU twice gives no bandwidth line to extrapolate on, and nothing is written"
run_pm train --predictor linreg --data "$NS" --in-dist p4,t4 --out "$TMP/r.params"
ok $([ "$rc" -ne 0 ] && [ ! -s "$TMP/out" ] && [ ! -e "$TMP/r.params" ] &&
     grep -q "linreg: bmm on Tesla_T4: 0 rows give no positive slope" "$TMP/err"; echo $?) \
  "linreg: a training GPU without rows is named, and nothing is written"

# 52-58: tile-mlp's and linreg's tensor-core vector and collective groups on vidur's tables
V="$TMP/v"
mkdir -p "$V/vidur/data/profiling/compute/a100/org/model" "$V/vidur/data/profiling/network/a100_dgx"
# 12 layer rows: 12 x 6 vector rows, 12 x 4 projections; 70 all-reduce shapes
awk -v ops="$ops" 'BEGIN { n = split(ops, o, " "); h = ""
  for (i = 1; i <= n; i++) h = h "time_stats." o[i] ".median,"
  print h "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers"
  for (j = 1; j <= 12; j++) { s = ""; for (i = 1; i <= n; i++) s = s sprintf("%.6f,", 0.001 * i * j + 0.005)
    print s "8,2,512,1024,32000,true," 64 * j ",1" } }' >"$V/vidur/data/profiling/compute/a100/org/model/mlp.csv"
awk 'BEGIN { print ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node"
  for (j = 1; j <= 70; j++) printf "%d,%.6f,0,%d,%d,all_reduce,8\n", j, 0.01 + 0.0001 * j, 2 * (1 + j % 4), 4096 * j }' \
  >"$V/vidur/data/profiling/network/a100_dgx/all_reduce.csv"
run_pm train --predictor tile-mlp --data "$V" --table vidur_layer,vidur_comm --members 1 --epochs 2 --out "$TMP/tc.params"
ok $([ "$rc" -eq 0 ] && grep -aqx 'rows: 190' "$TMP/tc.params" && grep -aqx 'tc_vector.rows: 72' "$TMP/tc.params" &&
     grep -aqx 'tc_comm.rows: 70' "$TMP/tc.params" && grep -aqx 'gpus: a100-sxm-80gb' "$TMP/tc.params" &&
     grep -aqx 'dtypes.elementwise: fp16' "$TMP/tc.params" && grep -aqx 'dtypes.layernorm: fp16' "$TMP/tc.params" &&
     ! grep -aq '^tc_gemm.rows' "$TMP/tc.params"; echo $?) \
  "tile-mlp on vidur: vector (72 rows) and collective (70) networks; 48 projections too few for a GEMM one"
run_pm eval --data "$V" --predictor tile-mlp --plugin-opt tile-mlp:tc_params="$TMP/tc.params" --per-op --format csv
# each predictor's rows come in the same order: the i-th tile-mlp row is the i-th roofline row
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 && $6 != "FC" { k = $2 "," $3 "," $6 "," $8 "," $12 "," $14 "," $15
       if ($1 == "roofline") { rk[++nr] = k; r[nr] = $18 } else if ($1 == "tile-mlp") { tk[++n] = k; t[n] = $18 } }
     END { for (i = 1; i <= n; i++) if (tk[i] != rk[i] || !(t[i] > 0) || t[i] < r[i] * (1 - 1e-6)) bad++
           exit !(n == 142 && nr == 142 && !bad) }' "$TMP/out"; echo $?) \
  "tile-mlp predicts the 72 vector and 70 collective rows from those networks, none under the roofline"
run_pm train --predictor tile-mlp --data "$V" --members 1 --epochs 2 --split train --in-dist a100,h100 --features tc --out "$TMP/tc2.params"
ok $([ "$rc" -eq 0 ] && awk -F': ' '$1 == "rows" { r = $2 } $1 == "rows_held_out" { h = $2 } $1 == "features" { f = $2 }
       $1 == "gpus" { g = $2 } END { exit !(r + h == 190 && h >= 20 && h <= 70 && f == "tc" && g == "a100-sxm-80gb,NVIDIA_H100_80GB_HBM3") }' "$TMP/tc2.params"; echo $?) \
  "--split train --in-dist --features tc: the held-out rows counted apart, the GPUs asked for recorded"
expect_fail 2 "--in-dist 'bogus': no such GPU" "train on the modern tables with an unknown --in-dist GPU: refused" -- \
  train --predictor tile-mlp --data "$V" --in-dist a100,bogus --out "$TMP/r.params"
expect_fail 2 "--features 'portable': the tensor-core networks take tc-nochip or tc" \
  "train on the modern tables with a NeuSight feature set: refused" -- \
  train --predictor tile-mlp --data "$V" --features portable --out "$TMP/r.params"
run_pm train --predictor linreg --data "$V" --out "$TMP/lr.params"
ok $([ "$rc" -eq 0 ] && grep -aqx 'tc_vector.fp16.gpus: a100-sxm-80gb' "$TMP/lr.params" &&
     grep -aqx 'tc_comm.fp16.gpus: a100-sxm-80gb' "$TMP/lr.params" && grep -aq '^tensor tc_comm.fp16.fit 1 2' "$TMP/lr.params" &&
     grep -aqx 'dtypes.elementwise: fp16' "$TMP/lr.params"; echo $?) \
  "linreg on vidur: per-dtype lines for the vector and collective groups"
# all-reduces whose time is exactly 5 us + bytes sent (2 (n-1)/n x 2 bytes x elements) / 1e11 B/s
LC="$TMP/lc/vidur/data/profiling/network/a100_dgx"
mkdir -p "$LC"
awk 'BEGIN { print ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node"
  for (j = 1; j <= 40; j++) { n = 2 * (1 + j % 4); s = 4096 * j; printf "%d,%.12g,0,%d,%d,all_reduce,8\n", j, 0.005 + 2 * (n - 1) / n * 2 * s / 1e8, n, s } }' \
  >"$LC/all_reduce.csv"
run_pm train --predictor linreg --data "$TMP/lc" --out "$TMP/lc.params"
run_pm eval --data "$TMP/lc" --predictor linreg --plugin-opt linreg:tc_params="$TMP/lc.params" --per-op --format csv
ok $([ "$rc" -eq 0 ] && awk -F, '$1 == "linreg" { n++; e = $19 < 0 ? -$19 : $19; if (!(e < 0.01)) bad++ } END { exit !(n == 40 && !bad) }' "$TMP/out"; echo $?) \
  "linreg's collective line reproduces all-reduces linear in the bytes sent (40 rows within 0.01 %)"

# 59-62: tensor-core networks whose shapes are wrong are refused naming the key, before any
# report (roofline's rows are held back)
nnbad () {  # nnbad SED PATTERN DESCRIPTION
  sed "$1" "$TMP/tc.params" >"$TMP/bad-nn.params"
  run_pm eval --data "$V" --table vidur_layer --predictor tile-mlp --plugin-opt tile-mlp:tc_params="$TMP/bad-nn.params"
  ok $([ "$rc" -eq 2 ] && grep -q -- "$2" "$TMP/err" && [ ! -s "$TMP/out" ]; echo $?) "$3"
}
nnbad 's/^tc_vector\.1\.layers: .*/tc_vector.1.layers: 14,0,96,96,1/' "bad-nn.params: tc_vector.1.layers: bad width '0'" \
  "a network layer of width 0: refused"
nnbad 's/^tc_vector\.1\.layers: .*/tc_vector.1.layers: 14/' "bad-nn.params: tc_vector.1.layers: 0 layers; 1 to 12 supported" \
  "a network of no layers: refused"
nnbad 's/^tc_vector\.1\.hidden_act: .*/tc_vector.1.hidden_act: tanh/' "bad-nn.params: tc_vector.1: missing or unknown activation (none, relu, sigmoid)" \
  "an activation perfmod does not have: refused"
nnbad 's/^tc_vector\.1\.layers: .*/tc_vector.1.layers: 14,96,96,96,96,1/' "bad-nn.params: tensor 'tc_vector.1.w3' is 1x96, expected 96x96" \
  "layers that do not match the stored tensors: refused naming the tensor"
# a split that leaves no row: nothing evaluated is a failure (exit 1), said, no table
mkdir -p "$TMP/one/aiter"
{ echo "gfx,cu_num,M,N,K,us"; echo "gfx942,304,64,256,512,10.5"; } >"$TMP/one/aiter/bf16_tuned_gemm.csv"
run_pm eval --data "$TMP/one" --predictor roofline --split holdout
ok $([ "$rc" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -q "no row was evaluated (0 in the held-out 20 %)" "$TMP/err"; echo $?) \
  "--split holdout of a one-row table: no row evaluated, exit 1, no table"
finish
