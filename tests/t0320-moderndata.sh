#!/bin/sh
# t0320-moderndata.sh: the modern measured-kernel tables: gzip CSV readers, one row per shape (the median), the seeded split, eval's groups, the physical roofline per dtype, bad input with file:line, and tile-mlp's tensor-core networks.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 54

D="$TMP/md"
G="$D/aiconfigurator/h100_sxm"
mkdir -p "$G/gemm/a/1" "$G/gemm/b/1" "$G/attention/a/1" "$G/comm/nccl/1" \
  "$D/vidur/data/profiling/compute/a100/org/m" "$D/llmcompass/x"
H=framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
dev="NVIDIA H100 80GB HBM3"
# The same bf16 shape in three libraries (1, 2, 6 ms: the median is 2), an fp8 row, and rows
# that are left out by rule: m = 0, and dtypes perfmod does not model.
{ echo $H
  echo "A,1,$dev,gemm,x,bfloat16,4096,4096,4096,1.0"
  echo "A,1,$dev,gemm,x,fp8,4096,4096,4096,0.5"
  echo "A,1,$dev,gemm,x,bfloat16,0,4096,4096,0.001"
  echo "A,1,$dev,gemm,x,fp8_block,4096,4096,4096,0.6"
  echo "A,1,$dev,gemm,x,int8_wo,16,4096,4096,0.02"; } | gzip >"$G/gemm/a/1/gemm_perf.csv.gz"
{ echo $H
  echo "B,1,$dev,gemm,x,bfloat16,4096,4096,4096,2.0"
  echo "B,2,$dev,gemm,x,bfloat16,4096,4096,4096,6.0"
  echo "B,1,$dev,gemm,x,bfloat16,16,8192,1024,0.01"; } | gzip >"$G/gemm/b/1/gemm_perf.csv.gz"
{ echo framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step,latency
  echo "A,1,$dev,context_attention,fa,2,1024,32,8,128,1,bfloat16,bfloat16,0,0.2"; } \
  | gzip >"$G/attention/a/1/context_attention_perf.csv.gz"
{ echo nccl_dtype,num_gpus,message_size,kernel_source,op_name,latency
  echo "half,8,1048576,NCCL,all_reduce,0.05"; } | gzip >"$G/comm/nccl/1/nccl_perf.csv.gz"
printf '64, 12288, 12288, 0.1900ms, 101.7Tflops\n' >"$D/llmcompass/x/matmul_A100.csv"

mkdir -p "$G/moe/a/1"
# One fused MoE layer kept (balanced, bf16): 64 tokens to top-2 of 8 experts, hidden 256,
# intermediate 128; power-law routing and int4 weights left out.
{ echo framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency
  echo "A,1,$dev,moe,x,bfloat16,64,256,128,2,8,1,1,balanced,0.01"
  echo "A,1,$dev,moe,x,bfloat16,64,256,128,2,8,1,1,power_law_1.2,0.02"
  echo "A,1,$dev,moe,x,int4_wo,64,256,128,2,8,1,1,balanced,0.01"; } | gzip >"$G/moe/a/1/moe_perf.csv.gz"

run_pm eval --data "$D" --predictor roofline --per-op --format csv
ok $([ "$rc" -eq 0 ] && grep -q '^roofline,' "$TMP/out"; echo $?) "eval reads the gzip tables, LLMCompass's headerless matmuls"
ok $(grep -qx "perfmod: $D: 2 rows of dtypes perfmod does not model left out (int8_wo, int4_wo)" "$TMP/err"
     echo $?) "the rows of dtypes not modelled: how many and which, in one line on stderr"
# The MoE layer (a MOE kernel) at the roofline: 128 assignments over the 8 experts, 16 tokens
# each; the experts' weights read once, 8 x (2 x 128 + 128) x 256 bf16 values; each assignment
# moves 5 x 256 + 2 x 256 + 2 x 128 + 256 / 2 16-bit activations (permute read and write,
# fc1 in, fc2 out, combine in; gate-and-up out and in; activation out, fc2 in; combine out
# per token): bytes over 3430 GB/s, above its FLOPs at the peak.
moe=$(awk -F, 'NR > 1 && $4 == "moe" { n++; t = $18 } END { print n, t }' "$TMP/out")
ok $(echo "$moe" | awk '{ b = 2 * 8 * 384 * 256 + 2 * 128 * (5 * 256 + 2 * 256 + 2 * 128 + 128)
     want = b / 3430e9 * 1e3; d = $2 / want - 1; exit !($1 == 1 && d < 1e-6 && d > -1e-6) }'; echo $?) \
  "moe: one balanced bf16 layer kept, its weights and activations over the bandwidth ($moe)"
ok $(awk -F, 'NR > 1 && $4 == "gemm"' "$TMP/out" | wc -l | awk '{ print ($1 == 4) ? 0 : 1 }') \
  "gemm: four shapes (bf16, fp8 and fp8_block 4096^3, bf16 16x1024x8192); m = 0 and int8_wo left out"
ok $(awk -F, 'NR > 1 && $4 == "gemm" && $7 == "bf16" && $9 == 4096 { print ($16 == 3 && $17 == 2) ? 0 : 1 }' "$TMP/out") \
  "one row per shape: the median of its three measurements (1, 2, 6 ms -> 2 ms)"
# The physical roofline: max(2mnk / peak, bytes / bandwidth), the peak per dtype from gpus.d.
# perfmod gpus: name vendor SMs fp32_gflops tf32_tf bf16_tf fp8_tf mem_gb mem_gbps ... link/nic
peaks=$("$PERFMOD" gpus | awk 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
  $1 == "NVIDIA_H100_80GB_HBM3" { print $c["bf16_tf"], $c["fp8_tf"], $c["mem_gbps"] }')
set -- $peaks
bf16=$1 fp8=$2 bw=$3
ok $(awk -F, -v p="$bf16" -v q="$fp8" -v bw="$bw" 'NR > 1 && $4 == "gemm" && $9 == 4096 {
       f8 = ($7 == "fp8" || $7 == "fp8_block"); pk = f8 ? q : p; e = f8 ? 1 : 2
       t = 2 * 4096^3 / (pk * 1e12); m = (4096 * 4096 * (2 * e + (f8 ? 2 : e))) / (bw * 1e9)
       if (m > t) t = m; d = $18 / (t * 1e3) - 1; if (d < -1e-6 || d > 1e-6) bad++; n++ }
     END { print (n == 3 && !bad) ? 0 : 1 }' "$TMP/out") "roofline: FLOPs over each dtype's peak (bf16, fp8; fp8_block at fp8's), physical bytes"
ok $(awk -F, -v bw="$bw" 'NR > 1 && $4 == "gemm" && $9 == 16 {
       t = 2 * (16 * 8192 + 8192 * 1024 + 16 * 1024) / (bw * 1e9); d = $18 / (t * 1e3) - 1
       print (d > -1e-6 && d < 1e-6) ? 0 : 1 }' "$TMP/out") "roofline: a memory-bound GEMM at the bandwidth (bytes in 1e9, not 2^30)"
ok $(awk -F, -v p="$bf16" 'NR > 1 && $4 == "context_attention" {
       pairs = 1024 * 1025 / 2; t = 4 * 2 * 32 * 128 * pairs / (p * 1e12); d = $18 / (t * 1e3) - 1
       print (d > -1e-6 && d < 1e-6 && $6 == "attn-prefill" && $13 == 8) ? 0 : 1 }' "$TMP/out") \
  "fused attention: 4 b h d pairs FLOPs, causal pairs, grouped-query heads kept"
link=$("$PERFMOD" gpus | awk 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
  $1 == "h100-sxm" { split($c["link/nic"], l, "/"); print l[1] }')
ok $(awk -F, -v l="$link" 'NR > 1 && $4 == "nccl" {
       t = 9 / 8 * 1048576 * 2 / (l * 1e9); d = $18 / (t * 1e3) - 1
       print (d > -1e-6 && d < 1e-6 && $6 == "all_reduce" && $14 == 8) ? 0 : 1 }' "$TMP/out") \
  "NCCL: elements of half; over NVSwitch with SHARP an all-reduce's bound is (1 + 1/n) of the buffer"
ok $(awk -F, 'NR > 1 && $4 == "llmcompass_gemm" { print ($5 == "a100-sxm-80gb" && $17 == 0.19 && $7 == "fp16") ? 0 : 1 }' "$TMP/out") \
  "LLMCompass: the GPU from the file name, fp16, '0.19ms' read as 0.19 ms"

run_pm eval --data "$D" --predictor roofline --dtype fp8 --format csv
ok $(awk -F, 'NR > 1 { n++; if ($4 != "fp8") bad++ } END { print (n == 1 && !bad) ? 0 : 1 }' "$TMP/out") \
  "--dtype fp8 keeps the fp8 rows only"
run_pm eval --data "$D" --predictor roofline --table gemm --gpu h100 --format csv
ok $(awk -F, 'NR > 1 { n++; if ($2 != "gemm") bad++ } END { print (n == 3 && !bad) ? 0 : 1 }' "$TMP/out") \
  "--table gemm --gpu h100 keeps that table on that GPU (bf16, fp8 and fp8_block groups)"
expect_fail 2 "--table 'gemmm': expected a comma list of gemm" "an unknown --table is refused" -- \
  eval --data "$D" --table gemmm
expect_fail 2 "--split 'half': expected all, holdout or train" "an unknown --split is refused" -- \
  eval --data "$D" --split half

# --- the seeded split: 200 shapes, disjoint halves that add up, about a fifth held out ---
S="$TMP/split/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$S"
{ echo $H; i=1; while [ $i -le 200 ]; do echo "A,1,$dev,gemm,x,bfloat16,$((i * 16)),4096,1024,0.0$i"; i=$((i + 1)); done; } \
  | gzip >"$S/gemm_perf.csv.gz"
count () { "$PERFMOD" eval --data "$TMP/split" --predictor roofline --per-op --format csv --split "$1" 2>/dev/null | awk -F, 'NR > 1' | cut -d, -f9 | sort; }
count all >"$TMP/all"; count holdout >"$TMP/hold"; count train >"$TMP/train"
ok $(sort "$TMP/hold" "$TMP/train" | cmp -s - "$TMP/all" && [ -z "$(comm -12 "$TMP/hold" "$TMP/train")" ] && echo 0 || echo 1) \
  "--split holdout and train are disjoint and together every shape"
ok $(wc -l <"$TMP/hold" | awk '{ print ($1 >= 20 && $1 <= 60) ? 0 : 1 }') "--split holdout is about 20 % of the shapes"
count holdout >"$TMP/hold2"
ok $(cmp -s "$TMP/hold" "$TMP/hold2" && echo 0 || echo 1) "the held-out shapes are the same on every run"

# --- bad input: file:line, exit 2, nothing on stdout ---
B="$TMP/bad/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$B"
{ echo $H; echo "A,1,$dev,gemm,x,bfloat16,16,16,16,1.0"; echo "A,1,$dev,gemm,x,bfloat16,16,16,16,fast"; } | gzip >"$B/gemm_perf.csv.gz"
expect_fail 2 "gemm_perf.csv.gz:3: column 'latency': 'fast' is not a number" \
  "a bad latency names file:line and the column" -- eval --data "$TMP/bad" --predictor roofline
{ echo $H; echo "A,1,NVIDIA H999,gemm,x,bfloat16,16,16,16,1.0"; } | gzip >"$B/gemm_perf.csv.gz"
expect_fail 2 "gemm_perf.csv.gz:2: device 'NVIDIA H999' is not in gpus.d" \
  "an unknown device names file:line" -- eval --data "$TMP/bad" --predictor roofline
{ echo framework,device,m,n,k,latency; echo "A,$dev,16,16,16,1.0"; } | gzip >"$B/gemm_perf.csv.gz"
expect_fail 2 "gemm_perf.csv.gz:1: no 'gemm_dtype' column" "a missing column names the file's header" -- \
  eval --data "$TMP/bad" --predictor roofline
{ echo $H; i=0; while [ $i -lt 3000 ]; do echo "A,1,$dev,gemm,x,bfloat16,$i,16,16,1.0"; i=$((i + 1)); done; } \
  | gzip | head -c 2000 >"$B/gemm_perf.csv.gz"
expect_fail 2 "gemm_perf.csv.gz:[0-9]+: compressed data ends early" "a truncated gzip table is refused, not half read" -- \
  eval --data "$TMP/bad" --predictor roofline
{ echo $H; echo "A,1,$dev,gemm,x,bfloat16,16,16,16,1.0"; echo "A,1,$dev,gemm,x,bfloat16,16"; } | gzip >"$B/gemm_perf.csv.gz"
expect_fail 2 "gemm_perf.csv.gz:3: 7 fields, the header has 10" "a short row names file:line, no read past it" -- \
  eval --data "$TMP/bad" --predictor roofline
{ echo $H; echo "A,1,$dev,gemm,x,bfloat16,-4,16,16,1.0"; } | gzip >"$B/gemm_perf.csv.gz"
expect_fail 2 "gemm_perf.csv.gz:2: column 'm': '-4' is not an integer >= 0" "a negative dimension is refused" -- \
  eval --data "$TMP/bad" --predictor roofline
rm -f "$B/gemm_perf.csv.gz"
mkdir -p "$TMP/bad/llmcompass"
printf '64, 128, 128, 0.19s, 1Tflops\n' >"$TMP/bad/llmcompass/matmul_A100.csv"
expect_fail 2 "matmul_A100.csv:1: time '0.19s' is not a positive number of ms" \
  "LLMCompass: a time not in ms is refused" -- eval --data "$TMP/bad" --predictor roofline

# --- perfmod kernel ---
run_pm kernel --op gemm --m 4096 --n 4096 --k 4096 --gpu h100 --dtype bf16 --predictor roofline --format csv
ok $(awk -F, -v p="$bf16" 'NR == 2 { d = $5 / (2 * 4096^3 / (p * 1e12) * 1e3) - 1; print (d > -1e-6 && d < 1e-6) ? 0 : 1 }' "$TMP/out") \
  "kernel --op gemm: the roofline of a 4096^3 bf16 GEMM"
run_pm kernel --op attention --batch 2 --seq 1024 --heads 32 --kv-heads 8 --head-dim 128 --gpu h100 --predictor roofline --format json
ok $([ $rc -eq 0 ] && jq -e '.dtype == "bf16" and .flops == 4 * 2 * 32 * 128 * (1024 * 1025 / 2)' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "kernel --op attention: bf16 by default on h100, causal FLOPs, valid JSON"
run_pm kernel --op collective --coll all_gather --bytes 8e6 --ranks 4 --gpu h100 --predictor roofline --format csv
ok $(awk -F, -v l="$link" 'NR == 2 { d = $5 / (3 / 4 * 8e6 / (l * 1e9) * 1e3) - 1; print (d > -1e-6 && d < 1e-6) ? 0 : 1 }' "$TMP/out") \
  "kernel --op collective: an all-gather moves (n-1)/n of the buffer"
run_pm kernel --op gemm --m 64 --n 64 --k 64 --gpu h100 --predictor roofline,habitat \
  --plugin-opt habitat:tc_params=none
ok $([ $rc -eq 0 ] && grep -q 'habitat .*not trained on bf16 FC kernels' "$TMP/out" &&
     grep -q 'habitat has no model of its own' "$TMP/err" && echo 0 || echo 1) \
  "kernel: a predictor without the dtype is marked, and says so once on stderr"
run_pm kernel --op gemm --m 64 --n 64 --k 64 --gpu h100 --predictor habitat
ok $([ $rc -eq 0 ] && ! grep -q 'not trained' "$TMP/out" && [ ! -s "$TMP/err" ] && echo 0 || echo 1) \
  "habitat's shipped per-dtype network covers a bf16 GEMM: no note"
run_pm kernel --op gemm --m 64 --n 64 --k 64 --gpu h100 --predictor linreg
ok $([ $rc -eq 0 ] && ! grep -q 'not trained' "$TMP/out" && [ ! -s "$TMP/err" ] && echo 0 || echo 1) \
  "linreg's shipped per-dtype fits cover a bf16 GEMM: no note"
run_pm kernel --op gemm --m 64 --n 64 --k 64 --gpu h100 --predictor linreg --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && grep -q 'not trained on bf16 FC' "$TMP/out" && echo 0 || echo 1) \
  "tc_params=none: NeuSight's fp32 fits alone, marked"
expect_fail 2 "--op 'conv': expected gemm, bmm, attention" "kernel: an unknown op is refused" -- kernel --op conv
expect_fail 2 "kernel --op gemm needs --k" "kernel: a missing dimension names its option" -- kernel --op gemm --m 1 --n 1
expect_fail 2 "--dtype fp8: a100-sxm-80gb has no fp8 matrix units" "kernel: fp8 on an A100 is refused" -- \
  kernel --op gemm --m 1 --n 1 --k 1 --gpu a100 --dtype fp8
expect_fail 2 "--m '0': expected an integer from 1 to 2\\^40" "kernel: a zero dimension is refused with the range" -- \
  kernel --op gemm --m 0 --n 1 --k 1

# --- tile-mlp's tensor-core networks ---
T="$TMP/tc/aiconfigurator/h100_sxm"
mkdir -p "$T/gemm/a/1" "$T/attention/a/1"
awk -v dev="$dev" 'BEGIN { print "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency"
  for (i = 1; i <= 120; i++) { m = 16 * i; printf "A,1,%s,gemm,x,bfloat16,%d,4096,4096,%.6f\n", dev, m, 0.004 + 2 * m * 4096 * 4096 / 7e11 }
  for (i = 1; i <= 120; i++) { m = 16 * i; printf "A,1,%s,gemm,x,fp8,%d,4096,4096,%.6f\n", dev, m, 0.004 + 2 * m * 4096 * 4096 / 1.4e12 } }' \
  | gzip >"$T/gemm/a/1/gemm_perf.csv.gz"
awk -v dev="$dev" 'BEGIN { print "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step,latency"
  for (i = 1; i <= 100; i++) { s = 64 * i; printf "A,1,%s,context_attention,fa,2,%d,32,8,128,1,bfloat16,bfloat16,0,%.6f\n", dev, s, 0.01 + 2 * 32 * 128 * s * s / 3e11 } }' \
  | gzip >"$T/attention/a/1/context_attention_perf.csv.gz"
run_pm train --predictor tile-mlp --data "$TMP/tc" --members 1 --epochs 3 --out "$TMP/tc.params"
ok $([ $rc -eq 0 ] && grep -q '^part' "$TMP/tc.params" && grep -Eq '^dtypes.linear.*bf16,fp8' "$TMP/tc.params" && echo 0 || echo 1) \
  "train on the modern tables writes tensor-core networks with the dtypes they saw"
run_pm kernel --op attention --batch 2 --seq 2048 --heads 32 --kv-heads 8 --head-dim 128 --gpu h100 \
  --predictor roofline,tile-mlp --plugin-opt tile-mlp:tc_params="$TMP/tc.params" --format csv
ok $(awk -F, 'NR == 2 { r = $5 } NR == 3 { print ($1 == "tile-mlp" && $5 >= r && $9 == "") ? 0 : 1 }' "$TMP/out") \
  "tile-mlp predicts fused attention from its networks, never under the physical floor"
run_pm eval --data "$TMP/tc" --predictor tile-mlp --plugin-opt tile-mlp:tc_params="$TMP/tc.params" \
  --plugin-opt tile-mlp:gemm_params="$TMP/tc.params" --per-op --format csv
ok $(awk -F, -v p="$bf16" -v q="$fp8" 'NR > 1 && $1 == "tile-mlp" && $4 == "gemm" { n++
       pk = ($7 == "fp8") ? q : p; if ($18 < 2 * $9 * $10 * $11 / (pk * 1e12) * 1e3 * (1 - 1e-6)) bad++ }
     END { print (n == 240 && !bad) ? 0 : 1 }' "$TMP/out") "no tensor-core GEMM predicted faster than its dtype's peak"
expect_fail 1 "attention kernels need the tensor-core parameters" \
  "without tensor-core parameters, tile-mlp refuses an attention kernel" -- \
  kernel --op attention --batch 1 --seq 64 --heads 4 --head-dim 64 --predictor tile-mlp \
  --plugin-opt tile-mlp:tc_params=none
expect_fail 2 "none.params: cannot read a parameter file: No such file" \
  "a tensor-core file that is not there is bad input, naming it" -- \
  kernel --op attention --batch 1 --seq 64 --heads 4 --head-dim 64 --predictor tile-mlp \
  --plugin-opt tile-mlp:tc_params="$TMP/none.params"
run_pm train --predictor habitat --data "$TMP/tc" --epochs 3 --out "$TMP/hab.params"
ok $([ $rc -eq 0 ] && grep -q 'habitat/gemm: 240 rows, 3 epochs' "$TMP/err" &&
     grep -aEq '^dtypes.linear: bf16,fp8' "$TMP/hab.params" && echo 0 || echo 1) \
  "habitat on the modern tables: one GEMM network over the dtypes it saw"
run_pm eval --data "$TMP/tc" --table gemm --predictor habitat --plugin-opt habitat:tc_params="$TMP/hab.params" --per-op --format csv
ok $([ $rc -eq 0 ] && ! grep -q 'no model of its own' "$TMP/err" &&
     awk -F, 'NR > 1 && $1 == "habitat" { n++; if (!($18 >= 0)) bad++; if ($18 > 0) pos++ }
       END { exit !(n == 240 && !bad && pos > 0) }' "$TMP/out" \
     && echo 0 || echo 1) "habitat predicts the bf16 and fp8 GEMMs from its own network"
mkdir -p "$TMP/tc-attn/aiconfigurator/h100_sxm"
cp -r "$T/attention" "$TMP/tc-attn/aiconfigurator/h100_sxm/"
run_pm train --predictor habitat --data "$TMP/tc-attn" --out "$TMP/x.params"
ok $([ $rc -eq 2 ] && grep -q "0 GEMM rows of a 16- or 8-bit dtype, too few" "$TMP/err" && [ ! -e "$TMP/x.params" ] && echo 0 || echo 1) \
  "habitat without GEMM rows is refused, writing nothing"
# The fixture's GEMMs take exactly 4 us + FLOPs / 7e14 (bf16) or / 1.4e15 (fp8) seconds:
# Li et al.'s line per GPU and dtype finds it.
run_pm train --predictor linreg --data "$TMP/tc" --out "$TMP/lr.params"
ok $([ $rc -eq 0 ] && grep -aEq '^dtypes.linear: bf16,fp8' "$TMP/lr.params" && grep -aq '^dtypes.attention: bf16' "$TMP/lr.params" && echo 0 || echo 1) \
  "linreg on the modern tables: per-dtype fits, their dtypes recorded"
run_pm eval --data "$TMP/tc" --table gemm --predictor linreg --plugin-opt linreg:tc_params="$TMP/lr.params" --per-op --format csv
ok $(awk -F, 'NR > 1 && $1 == "linreg" { n++; e = $19 < 0 ? -$19 : $19; if (e > 0.05) bad++ }
     END { print (n == 240 && !bad) ? 0 : 1 }' "$TMP/out") "linreg's per-dtype line reproduces linear latencies (within the fixture's rounding, 0.05 %)"
printf 'perfmod-params 1\npredictor tile-mlp\n' >"$TMP/wrong.params"
expect_fail 2 "wrong.params:2: expected 'key: value'" "a tensor-core file that is not one is refused, naming it" -- \
  kernel --op attention --batch 1 --seq 64 --heads 4 --head-dim 64 --predictor tile-mlp \
  --plugin-opt tile-mlp:tc_params="$TMP/wrong.params"
# The shipped networks' 16-bit norms narrower than any they were trained on
# (Qwen3's q and k norms, 128 wide): the same outputs in rows of the
# narrowest trained width, so fewer bytes never take longer.
norm_ms () {  # norm_ms ROWS COLS: tile-mlp's ms for a bf16 norm on H100
  "$PERFMOD" kernel --op norm --rows "$1" --cols "$2" --gpu h100 --dtype bf16 \
    --predictor tile-mlp --format csv 2>/dev/null | awk -F, 'NR == 2 && $1 == "tile-mlp" { print $5 }'
}
n16x128=$(norm_ms 16 128) n64x128=$(norm_ms 64 128) n512x128=$(norm_ms 512 128)
n1x2560=$(norm_ms 1 2560) n16x2560=$(norm_ms 16 2560)
ok $(awk -v a="$n64x128" -v b="$n16x2560" 'BEGIN { exit !(a > 0 && b > 0 && a <= b) }'; echo $?) \
  "tile-mlp: a 64 x 128 bf16 norm (a fifth of the outputs) is no slower than a 16 x 2560 one"
ok $(awk -v a="$n16x128" -v b="$n64x128" -v c="$n512x128" 'BEGIN { exit !(a > 0 && a <= b && b <= c) }'; echo $?) \
  "tile-mlp: 128-wide bf16 norms take longer with more rows, not shorter"
ok $(awk -v a="$n16x128" -v b="$n1x2560" 'BEGIN { exit !(a > 0 && a == b) }'; echo $?) \
  "tile-mlp: a 16 x 128 bf16 norm is its 2048 outputs in one 2560-wide row, the narrowest trained"
# MLA's absorbed-decode products (aiconfigurator mla_bmm_perf): a BMM per head over the
# tokens, pre (128 -> 512 wide) and post (512 -> 128).  The bf16 pre shape three times (10,
# 20, 30 us: the median is 20); fp8 is per tensor in SGLang's rows and block-scaled in
# TensorRT-LLM's; TensorRT-LLM's products dequantised to bf16 are left out.
M="$TMP/mla/aiconfigurator/h100_sxm/mla_bmm"
mkdir -p "$M/s/1" "$M/t/1"
HM=framework,version,device,op_name,kernel_source,bmm_dtype,num_tokens,num_heads,latency
{ echo $HM
  echo "SGLang,1,$dev,mla_gen_pre,default,bfloat16,64,16,0.010"
  echo "SGLang,2,$dev,mla_gen_pre,default,bfloat16,64,16,0.030"
  echo "SGLang,1,$dev,mla_gen_post,default,fp8,64,16,0.05"; } | gzip >"$M/s/1/mla_bmm_perf.csv.gz"
{ echo $HM
  echo "TRTLLM,1,$dev,mla_gen_pre,default,bfloat16,64,16,0.020"
  echo "TRTLLM,1,$dev,mla_gen_post,default,fp8,64,16,0.04"
  echo "TRTLLM,2,$dev,mla_gen_post,trtllm_bmm_out_dequant_bf16,fp8,64,16,0.04"; } \
  | gzip >"$M/t/1/mla_bmm_perf.csv.gz"
run_pm eval --data "$TMP/mla" --table mla_bmm --predictor roofline --per-op --format csv
ok $([ $rc -eq 0 ] && grep -qx "perfmod: $TMP/mla: 1 row of dtypes perfmod does not model left out (fp8 dequantised to bf16)" "$TMP/err"; echo $?) \
  "mla_bmm: the dequantising fp8 products are left out, said in one line"
# perfmod eval's per-op columns: ...,class 6, dtype 7, b 8, m 9, n 10, k 11, ..., measurements 16, measured_ms 17
ok $(awk -F, 'NR > 1 { r[$7] = $6 " " $8 " " $9 " " $10 " " $11 " " $16 " " $17 }
     END { exit !(r["bf16"] == "BMM 16 64 128 512 3 0.02" && r["fp8"] == "BMM 16 64 512 128 1 0.05" &&
                  r["fp8_block"] == "BMM 16 64 512 128 1 0.04" && NR == 4) }' "$TMP/out"; echo $?) \
  "mla_bmm: pre is 16 heads of 64 x 128 by 128 x 512, post 512 by 128; fp8 per tensor (SGLang) and block-scaled (TensorRT-LLM); one row per shape, the median"
# pre at the bf16 roofline: 2 x 16 x 64 x 128 x 512 FLOPs; 16 x (64 x 128 + 128 x 512 + 64 x 512) bf16 values
ok $(awk -F, -v bf="$bf16" -v bw="$bw" 'NR > 1 && $7 == "bf16" {
       f = 2 * 16 * 64 * 128 * 512 / (bf * 1e12); b = 2 * 16 * (64 * 128 + 128 * 512 + 64 * 512) / (bw * 1e9)
       want = (f > b ? f : b) * 1e3; d = $18 / want - 1; good = d < 1e-6 && d > -1e-6 }
     END { exit !good }' "$TMP/out"; echo $?) \
  "mla_bmm: the roofline of a pre product, its FLOPs and its three matrices' bytes"
run_pm eval --data "$TMP/mla" --table mla_bmm --predictor tile-mlp
ok $([ $rc -eq 0 ] && grep -Eq '^tile-mlp +mla_bmm +BMM +bf16 ' "$TMP/out"; echo $?) "mla_bmm: tile-mlp's GEMM networks predict the batched products"
{ echo $HM; echo "SGLang,1,$dev,mla_gen_mid,default,bfloat16,64,16,0.010"; } | gzip >"$M/s/1/mla_bmm_perf.csv.gz"
expect_fail 2 "mla_bmm_perf.csv.gz:2: op_name 'mla_gen_mid': expected mla_gen_pre or mla_gen_post" \
  "mla_bmm: an unknown product is refused at its file:line" -- eval --data "$TMP/mla" --table mla_bmm --predictor roofline
finish
