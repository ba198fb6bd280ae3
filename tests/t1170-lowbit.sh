#!/bin/sh
# t1170-lowbit.sh: Blackwell's nvfp4 and block-scaled fp8 (fp8_block): GEMMs at their peaks and bytes by hand, their weights' memory, inference and serving, the tables' rows read as those dtypes (fp8_static as fp8), and what has no such units or is not modelled refused.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 16

# gpus.d's numbers: perfmod gpus' columns by name
col () {
  "$PERFMOD" gpus | awk -v g="$1" -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
    $1 == g { print $c[k] }'
}
fp4=$(col gb200 fp4_tf) fp8=$(col gb200 fp8_tf) bw=$(col gb200 mem_gbps)

# A compute-bound nvfp4 GEMM on GB200 at the roofline: 2 m n k FLOPs at the FP4 peak; its
# operands at half a byte and an e4m3 scale per 16 values, its output bf16
run_pm kernel --op gemm --m 8192 --n 8192 --k 8192 --dtype nvfp4 --gpu gb200 \
  --predictor roofline --format csv
got=$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && awk -v t="$got" -v p="$fp4" -v bw="$bw" 'BEGIN {
       f = 2 * 8192^3 / (p * 1e12); b = (2 * 8192^2 * 0.5625 + 8192^2 * 2) / (bw * 1e9)
       w = (f > b ? f : b) * 1e3; d = t / w - 1; exit !(p > 0 && f > b && d < 1e-4 && d > -1e-4) }'
     echo $?) "nvfp4 GEMM at gpus.d's FP4 peak ($fp4 TFLOP/s): $got ms by hand"
run_pm kernel --op gemm --m 8192 --n 8192 --k 8192 --dtype nvfp4 --gpu gb200 \
  --predictor roofline --format json
ok $([ "$rc" -eq 0 ] && jq -e --arg p "$fp4" '.dtype == "nvfp4" and
       ((.predictions[0].tflops / ($p | tonumber) - 1) | fabs < 1e-3)' "$TMP/out" >/dev/null
     echo $?) "its JSON names the dtype and reaches the FP4 peak"
# A memory-bound fp8_block GEMM: one byte an operand, the bf16 output, at the bandwidth
run_pm kernel --op gemm --m 16 --n 8192 --k 8192 --dtype fp8_block --gpu gb200 \
  --predictor roofline --format csv
got=$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && awk -v t="$got" -v p="$fp8" -v bw="$bw" 'BEGIN {
       f = 2 * 16 * 8192^2 / (p * 1e12); b = (16 * 8192 + 8192^2 + 16 * 8192 * 2) / (bw * 1e9)
       w = (f > b ? f : b) * 1e3; d = t / w - 1; exit !(b > f && d < 1e-4 && d > -1e-4) }'
     echo $?) "fp8_block GEMM: fp8's bytes at the bandwidth, by hand ($got ms)"

expect_one_line 2 "--dtype nvfp4: NVIDIA_H100_80GB_HBM3 has no nvfp4 matrix units" \
  "kernel --dtype nvfp4 on a GPU without FP4 units is refused" -- \
  kernel --op gemm --m 64 --n 64 --k 64 --dtype nvfp4 --gpu h100
expect_one_line 2 "--dtype nvfp4: .* no nvfp4 matrix units" \
  "predict --dtype nvfp4 on H100 is refused" -- --model llama3-8b --gpu h100 --dtype nvfp4
expect_one_line 2 "--dtype fp8_block: training is modelled in fp32, tf32, fp16, bf16 and fp8" \
  "training in fp8_block is refused, naming what is modelled" -- \
  --model llama3-8b --gpu b200 --mode train --dtype fp8_block
expect_one_line 2 "--dtype 'fp4': expected fp32, tf32, fp16, bf16, fp8, nvfp4, fp8_block or mxfp4" \
  "an unknown dtype is refused with the list" -- --model llama3-8b --gpu b200 --dtype fp4

# Inference memory: every parameter at the dtype's bytes (nvfp4 0.5625, fp8_block 1, bf16 2)
for d in bf16 nvfp4 fp8_block; do
  run_pm --model llama3-8b --gpu b200 --dtype $d --batch 8 --seq 1024 --predictor roofline \
    --format json
  eval "w_$d=\$(jq -r '.predictions[0].memory_gib.weights' \"\$TMP/out\")"
  eval "t_$d=\$(jq -r '.predictions[0].e2e_ms' \"\$TMP/out\")"
done
ok $(awk -v a="$w_bf16" -v b="$w_nvfp4" -v c="$w_fp8_block" 'BEGIN {
       d1 = b / a - 0.5625 / 2; d2 = c / a - 0.5; exit !(a > 0 && d1 < 1e-6 && d1 > -1e-6 && d2 < 1e-6 && d2 > -1e-6) }'
     echo $?) "weights: nvfp4 0.28125 and fp8_block 0.5 of bf16's ($w_nvfp4, $w_fp8_block, $w_bf16 GiB)"
ok $(awk -v a="$t_bf16" -v b="$t_nvfp4" -v c="$t_fp8_block" 'BEGIN { exit !(b > 0 && b < c && c < a) }'
     echo $?) "a prefill of 8 x 1024 tokens at the roofline: nvfp4 < fp8_block < bf16 ($t_nvfp4, $t_fp8_block, $t_bf16 ms)"

# tile-mlp's own model covers nvfp4 and fp8_block GEMMs (trained on GB200's and RTX PRO 6000's)
run_pm --model llama3-8b --gpu gb200 --dtype nvfp4 --batch 8 --seq 1024 --predictor tile-mlp \
  --format json
ok $([ "$rc" -eq 0 ] && jq -e '.predictions[0].dtype_fallback == false and .predictions[0].e2e_ms > 0' \
       "$TMP/out" >/dev/null && ! grep -q "no model of its own" "$TMP/err"; echo $?) \
  "tile-mlp predicts an nvfp4 run on GB200 with its own model (no fallback)"

# The GEMM networks are a file of their own (gemm_params): without it a GEMM is its fp32
# equivalent, marked; a file that is not there is bad input, named
run_pm kernel --op gemm --m 1024 --n 1024 --k 1024 --dtype nvfp4 --gpu gb200 --predictor tile-mlp \
  --plugin-opt tile-mlp:gemm_params=none --format csv
ok $([ "$rc" -eq 0 ] && grep -q "tile-mlp has no model of its own for this run's nvfp4 FC" "$TMP/err" &&
     awk -F, 'NR == 2 { exit !($1 == "tile-mlp" && $5 > 0) }' "$TMP/out"; echo $?) \
  "gemm_params=none: an nvfp4 GEMM predicted outside tile-mlp's own model, and said"
expect_fail 2 "nogemm.params: cannot read a parameter file" \
  "a GEMM file that is not there is refused, naming it" -- \
  kernel --op gemm --m 64 --n 64 --k 64 --gpu gb200 --predictor tile-mlp \
  --plugin-opt tile-mlp:gemm_params="$TMP/nogemm.params"

# Serving in nvfp4: the launch reads an NVFP4 checkpoint; H100 refused
run_pm serve --model llama3-8b --gpu b200 --dtype nvfp4 --isl 1024 --osl 32 --concurrency 2 \
  --predictor roofline --format json
ok $([ "$rc" -eq 0 ] && jq -e '.ttft_ms.mean > 0' "$TMP/out" >/dev/null; echo $?) \
  "serve --dtype nvfp4 on B200 runs"
expect_one_line 2 "--dtype nvfp4: NVIDIA_H100_80GB_HBM3 has no nvfp4 matrix units" \
  "serve --dtype nvfp4 on H100 is refused" -- \
  serve --model llama3-8b --gpu h100 --dtype nvfp4 --isl 128 --osl 8 --concurrency 1
run_pm search --serve --model llama3-8b --gpu b200 --gpus 2 --isl 256 --osl 16 --jobs 1 \
  --dtype nvfp4 --no-disagg --predictor roofline --format json
ok $([ "$rc" -eq 0 ] && jq -e '(.frontier | length) > 0 and
       all(.frontier[]; .launch | contains(" --quantization modelopt_fp4"))' "$TMP/out" >/dev/null
     echo $?) "the serving search's vLLM launch loads ModelOpt's NVFP4 checkpoint"

# The tables: nvfp4 and fp8_block rows read as those dtypes; fp8_static as fp8, the same
# shape's measurements together (median of 1 and 3 ms: 2)
G="$TMP/md/aiconfigurator/gb200/gemm/a/1"
mkdir -p "$G"
{ echo framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
  echo "A,1,NVIDIA GB200,gemm,x,nvfp4,4096,4096,4096,0.05"
  echo "A,1,NVIDIA GB200,gemm,x,fp8_block,4096,4096,4096,0.07"
  echo "A,1,NVIDIA GB200,gemm,x,fp8,4096,4096,4096,1.0"
  echo "A,1,NVIDIA GB200,gemm,x,fp8_static,4096,4096,4096,3.0"; } | gzip >"$G/gemm_perf.csv.gz"
run_pm eval --data "$TMP/md" --predictor roofline --per-op --format csv
ok $([ "$rc" -eq 0 ] && [ "$(awk -F, 'NR > 1 { print $7 ":" $16 ":" $17 }' "$TMP/out" | sort | tr '\n' ' ')" = \
     "fp8:2:2 fp8_block:1:0.07 nvfp4:1:0.05 " ]; echo $?) \
  "eval: nvfp4 and fp8_block rows as themselves, fp8_static with fp8 (median of two)"

finish
