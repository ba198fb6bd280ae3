#!/bin/sh
# t0120-precision.sh: --dtype and --precision: each kernel's dtype, the defaults per GPU, refusals, a predictor's dtype fallback said once and marked, and the memory terms.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 42

tiny="$TMP/tiny.json"
# GPT-2, L=4, d=8, 4 heads, f=32, v=16
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 8, "n_head": 4, "n_inner": 32,\n "n_positions": 16, "vocab_size": 16}\n' > "$tiny"
T="--model $tiny --batch 2 --seq 4"

# dtypes GEMM-DTYPE OTHER-DTYPE: every kernel row of a perfmod graph CSV in $TMP/out has
# its class's dtype (FC and BMM: the first, the others the second), and both kinds occur.
# The columns are found by name.
dtypes () {
  awk -F, -v g="$1" -v o="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { d = $c["dtype"]; k = $c["class"]
      if (k == "FC" || k == "BMM") { ng++; if (d != g) bad++ } else { no++; if (d != o) bad++ } }
    END { exit !(ng > 0 && no > 0 && !bad) }' "$TMP/out"
}

# --- each precision path: the kernels' dtypes ---
run_pm graph $T --mode train --precision fp32 --gpu h100 --format csv
ok $([ $rc -eq 0 ] && dtypes fp32 fp32 && echo 0 || echo 1) "--precision fp32: every kernel fp32"
run_pm graph $T --mode train --precision amp-fp16 --gpu h100 --format csv
ok $([ $rc -eq 0 ] && dtypes fp16 fp16 && echo 0 || echo 1) "--precision amp-fp16: GEMMs and the rest in fp16"
run_pm graph $T --mode train --precision bf16 --gpu h100 --format csv
ok $([ $rc -eq 0 ] && dtypes bf16 bf16 && echo 0 || echo 1) "--precision bf16: every kernel bf16"
# bf16 GEMM bytes: 2 b (mn + nk + mk)
ok $(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
     $c["class"] == "FC" { n++; x = 2 * $c["b"] * ($c["m"] * $c["n"] + $c["n"] * $c["k"] + $c["m"] * $c["k"]);
                          if ($c["bytes"] != x) bad++ }
     END { print (n > 0 && !bad) ? 0 : 1 }' "$TMP/out") "bf16 GEMMs move 2 bytes per element"
run_pm graph $T --mode train --precision fp8 --gpu h100 --format csv
cp "$TMP/out" "$TMP/fp8.csv"
# Megatron-Core's output layer is its own, outside Transformer Engine's fp8: bf16 GEMMs
ok $([ $rc -eq 0 ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
       $1 == "output_layer" && $c["class"] == "FC" { n++; if ($c["dtype"] != "bf16") bad++ }
       END { exit !(n == 3 && !bad) }' "$TMP/fp8.csv"; echo $?) \
  "--precision fp8: the output layer's three GEMMs in bf16 (Megatron-Core's own layer)"
# every other Linear casts its input (forward) and its incoming gradient (backward) to fp8
# first: 2 bytes read and 1 + 1 written per element, 4 b m n and 4 b m k bytes
ok $(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
       $2 == "Linear" && $c["class"] == "FC" && $c["phase"] == "fw" && $1 != "output_layer" {
         want[$1 ",fw"] = 4 * $c["b"] * $c["m"] * $c["n"]; want[$1 ",bw"] = 4 * $c["b"] * $c["m"] * $c["k"] }
       $c["kernel"] == "quantize" { got[$1 "," $c["phase"]] = $c["bytes"]; if ($1 == "output_layer") bad++ }
       END { for (k in want) { n++; if (got[k] != want[k]) bad++ } exit !(n >= 8 && !bad) }' "$TMP/fp8.csv"
     echo $?) "--precision fp8: each Linear's input and gradient cast to fp8 before it, 4 bytes an element"
grep -v '^output_layer,' "$TMP/fp8.csv" > "$TMP/out"
ok $([ $rc -eq 0 ] && dtypes fp8 bf16 && echo 0 || echo 1) "--precision fp8: the other GEMMs in fp8, every other kernel in bf16"
# fp8 GEMMs read 1-byte operands and write a bf16 output: b (mn + nk) + 2 b mk
ok $(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
     $c["class"] == "FC" || $c["class"] == "BMM" { n++; b = $c["b"]; m = $c["m"]; nn = $c["n"]; k = $c["k"];
       if ($c["bytes"] != b * (m * nn + nn * k) + 2 * b * m * k) bad++ }
     END { print (n > 0 && !bad) ? 0 : 1 }' "$TMP/out") "fp8 GEMMs: fp8 operands, bf16 output"
run_pm $T --mode train --dtype fp16 --gpu a100
ok $([ $rc -eq 0 ] && grep -q '^assumed: .*--precision amp-fp16 (--dtype fp16 in training)' "$TMP/out" &&
     run_pm graph $T --mode train --dtype fp16 --gpu a100 --format csv && dtypes fp16 fp16 && echo 0 || echo 1) \
  "--dtype fp16 in training is amp-fp16, and says so"
run_pm graph $T --mode inf --dtype fp8 --gpu h100 --format csv
ok $([ $rc -eq 0 ] && dtypes fp8 bf16 && echo 0 || echo 1) "--dtype fp8 inference: fp8 GEMMs, bf16 for the rest"
run_pm graph $T --mode inf --dtype tf32 --gpu a100 --format csv
ok $([ $rc -eq 0 ] && dtypes tf32 fp32 && echo 0 || echo 1) "--dtype tf32: TF32 GEMMs, fp32 for the rest"

# --- the defaults: what users run on each GPU ---
for case in "h100 inf dtype bf16" "h100 train precision bf16" "v100 inf dtype fp16" \
            "v100 train precision amp-fp16" "p100 inf dtype fp32" "p100 train precision fp32"; do
  set -- $case
  run_pm $T --gpu "$1" --mode "$2"
  ok $([ $rc -eq 0 ] && grep -q "^assumed: .*--$3 $4 (default for $1)" "$TMP/out" &&
       grep -q "^perfmod .*, $4, on " "$TMP/out" && echo 0 || echo 1) "$1 $2: --$3 $4 by default, on the assumed line"
done
run_pm graph $T --gpu v100 --mode train --format csv
ok $([ $rc -eq 0 ] && dtypes fp16 fp16 && echo 0 || echo 1) "v100's default training kernels are fp16"
printf 'Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape\nx,misc,[],[],[],set(),set(),[],"(4, 8)"\n' >"$TMP/trace.csv"
run_pm --opgraph "$TMP/trace.csv" --gpu h100
ok $([ $rc -eq 0 ] && grep -q "^assumed: .*--dtype fp32 (NeuSight's traces are of fp32 runs)" "$TMP/out" &&
     echo 0 || echo 1) "an imported trace stays fp32 by default, saying why"

# --- refusals, naming the option ---
expect_fail 2 "--precision fp8: [^ ]+ has no fp8 matrix units" "--precision fp8 on an A100 is refused" -- \
  $T --gpu a100 --mode train --precision fp8
expect_fail 2 "--dtype fp8: [^ ]+ has no fp8 matrix units" "--dtype fp8 in training on an A100 is refused" -- \
  $T --gpu a100 --mode train --dtype fp8
expect_fail 2 "--precision bf16: Tesla_V100-PCIE-32GB has no bf16" "--precision bf16 on a V100 is refused" -- \
  $T --gpu v100 --mode train --precision bf16
expect_fail 2 "--precision bf16: a training precision" "--precision for inference is refused" -- $T --precision bf16
expect_fail 2 "--precision 'fp16': expected fp32, amp-fp16, bf16, fp8 or fp8-cs" "an unknown precision is refused" -- \
  $T --mode train --precision fp16
expect_fail 2 "--dtype bf16 and --precision fp8 disagree" "--dtype and --precision that disagree are refused" -- \
  $T --mode train --dtype bf16 --precision fp8

# --- a predictor without the dtype: one line on stderr, a mark in the table ---
notes () { grep -c '^perfmod: note: ' "$TMP/err"; }
run_pm $T --gpu h100 --mode train --precision bf16 --predictor roofline,linreg --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 1 ] &&
     grep -q '^perfmod: note: linreg has no model of its own for this run.s bf16 FC, BMM, EW, Softmax, LN, ATTN kernels (it covers fp32)' "$TMP/err" &&
     echo 0 || echo 1) "linreg at bf16: one note on stderr, naming it, the dtype and the classes"
ok $(awk '/^ +roofline +linreg\*$/ { h = 1 } /^\(\*: / { f = 1 } END { exit !(h && f) }' "$TMP/out"; echo $?) \
  "the table marks linreg's column with * and explains it in a footnote"
run_pm $T --gpu h100 --mode train --precision bf16 --predictor roofline,linreg --strategy tp=2,dp=2 --gpus-per-node 4 --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 1 ] && grep -q '^perfmod: note: linreg ' "$TMP/err" &&
     awk '/^ +roofline +linreg\*$/ { h = 1 } /^\(\*: / { f = 1 } END { exit !(h && f) }' "$TMP/out" && echo 0 || echo 1) \
  "with --strategy: still one note, over every stage graph and the optimizer, and the mark"
run_pm $T --gpu h100 --mode train --precision bf16 --predictor roofline,linreg --strategy tp=2,dp=2 --gpus-per-node 4 --format json --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && jq -e '[.predictions[].dtype_fallback] == [false, true] and .precision == "bf16"' "$TMP/out" >/dev/null &&
     echo 0 || echo 1) "JSON under a strategy: dtype_fallback false for roofline, true for linreg"
run_pm $T --gpu h100 --mode inf --dtype fp8 --predictor linreg,roofline --format json --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 1 ] && grep -q 'bf16 BMM, EW, LN, ATTN and fp8 FC kernels' "$TMP/err" &&
     jq -e '[.predictions[].dtype_fallback] == [true, false] and .dtypes.gemm == "fp8" and .dtypes.other == "bf16"' "$TMP/out" >/dev/null &&
     echo 0 || echo 1) "fp8 inference: one note naming both dtypes; JSON dtype_fallback and dtypes"
run_pm $T --gpu h100 --mode train --precision fp32 --predictor roofline,linreg --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 0 ] && grep -q 'linreg' "$TMP/out" && ! grep -q 'linreg\*' "$TMP/out" && echo 0 || echo 1) \
  "at fp32, which its parameters cover, no note and no mark"

# The parameter file's dtypes keys: all classes, one class, a bad name.
sed '1a dtypes: fp32,bf16' "$top_srcdir/params/linreg.params" > "$TMP/lr-bf16.params"
run_pm $T --gpu h100 --mode train --precision bf16 --predictor linreg --plugin-opt linreg:params="$TMP/lr-bf16.params" --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 1 ] && grep -q "this run's bf16 ATTN kernels" "$TMP/err" && echo 0 || echo 1) \
  "dtypes: fp32,bf16 in the parameter file: bf16 is covered, but for fused attention (predicted as its products)"
sed '1a dtypes.linear: fp32,bf16' "$top_srcdir/params/linreg.params" > "$TMP/lr-fc.params"
run_pm $T --gpu h100 --mode train --precision bf16 --predictor linreg --plugin-opt linreg:params="$TMP/lr-fc.params" --plugin-opt linreg:tc_params=none
ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 1 ] && grep -q 'bf16 BMM, EW' "$TMP/err" && ! grep -q 'FC' "$TMP/err" &&
     echo 0 || echo 1) "dtypes.linear covers FC alone: the note names the other classes"
sed '1a dtypes: fp32,bf17' "$top_srcdir/params/linreg.params" > "$TMP/lr-bad.params"
expect_fail 2 "lr-bad.params: dtypes: 'bf17' is no dtype" "an unknown dtype name in the parameter file is refused, naming the key" -- \
  $T --gpu h100 --mode train --predictor linreg --plugin-opt linreg:params="$TMP/lr-bad.params"

# reproduce --table distributed (fp32): a file covering bf16 alone falls back there too, once.
NEUSIGHT=${PERFMOD_NEUSIGHT:-$top_srcdir/../shared/neusight}
if [ -f "$NEUSIGHT/summary/distributed.csv" ]; then
  sed '1a dtypes: bf16' "$top_srcdir/params/linreg.params" > "$TMP/lr-only.params"
  run_pm reproduce --neusight "$NEUSIGHT" --table distributed --predictor linreg \
    --plugin-opt linreg:params="$TMP/lr-only.params" --plugin-opt linreg:tc_params=none
  ok $([ $rc -eq 0 ] && [ "$(notes)" -eq 1 ] && grep -q 'fp32 FC, BMM' "$TMP/err" && echo 0 || echo 1) \
    "reproduce --table distributed: one note for the whole table"
else
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP NeuSight data not found at $NEUSIGHT (set PERFMOD_NEUSIGHT)"
fi

# --- memory: the terms by hand from the parameter count (GiB: 2^30 bytes) ---
P=$("$PERFMOD" models | awk '$1 == "gpt2-large" { print $NF }')
mem () { jq -r ".predictions[0].memory_gib.$1" "$TMP/out"; }
near () { awk -v a="$1" -v b="$2" 'BEGIN { d = a / b - 1; exit !(b > 0 && d < 1e-9 && d > -1e-9) }'; }
# x EXPR: EXPR of P (the parameters), in full precision
x () { awk -v p="$P" "BEGIN { printf \"%.17g\", $1 }"; }
M="--model gpt2-large --gpu h100 --batch 1 --seq 1024 --format json"
run_pm $M --mode train --precision fp32
ok $([ $rc -eq 0 ] && near "$(mem weights)" "$(x 4*p/1073741824)" &&
     near "$(mem gradients)" "$(x 4*p/1073741824)" &&
     near "$(mem optimizer)" "$(x 8*p/1073741824)" && echo 0 || echo 1) \
  "fp32 training: 4 + 4 + 8 bytes per parameter (P = $P)"
a32=$(mem activations)
for p in bf16 fp8; do
  run_pm $M --mode train --precision $p
  ok $([ $rc -eq 0 ] && near "$(mem weights)" "$(x 2*p/1073741824)" &&
       near "$(mem gradients)" "$(x 4*p/1073741824)" &&
       near "$(mem optimizer)" "$(x 12*p/1073741824)" && echo 0 || echo 1) \
    "$p training: 2 (bf16 weights) + 4 + 12 (fp32 master and moments) bytes per parameter"
  eval "a_$p=\$(mem activations)"
done
# activations, Korthikanti et al. with e-byte elements and 1-byte masks: per layer
# sbh (16 e + 2) + a s^2 b (2 e + 1) unfused (fp32), sbh (16 e + 2) + 4 a s b with fused
# attention (bf16: only the fp32 log-sum-exp per query row); the loss's fp32 logits and
# their gradient, 8 b s V (fp32, eager), or Megatron-Core's fp32 softmax alone, 4 b s V (bf16
# and fp8, kernels te); the embedding's output, 2 s b h.  GPT-2 Large: L = 36, h = 1280,
# a = 20, V = 50257.
act () { awk -v e="$1" -v flash="$2" -v fp8="${fp8:-0}" 'BEGIN { s = 1024; b = 1; h = 1280; a = 20; L = 36; V = 50257;
         att = flash ? 4*a*s*b : a*s*s*b * (2*e + 1);
         lg = e == 4 ? 8 : 4;   # the loss: PyTorch keeps fp32 logits and gradient, Megatron-Core its softmax
         printf "%.17g", (L * (s*b*h * (16*e + 2 - 7*fp8) + att) + lg*b*s*V + 2*s*b*h) / 1073741824 }'; }
ok $(near "$a32" "$(act 4 0)" && near "$a_bf16" "$(act 2 1)" && echo 0 || echo 1) \
  "activations: 4-byte elements and the scores in fp32, 2-byte ones and fused attention in bf16, by hand"
# fp8: Transformer Engine keeps the four GEMMs' inputs (the two norm outputs, the projection's
# input, fc2's 4h-wide input) as 1-byte copies: 7 of the 34 sbh
ok $(near "$a_fp8" "$(fp8=1 act 2 1)" && echo 0 || echo 1) \
  "activations in fp8: the GEMMs' saved inputs in one byte (27 sbh per layer), by hand"
run_pm $M --mode train --precision bf16 --attention unfused
ok $([ $rc -eq 0 ] && near "$(mem activations)" "$(act 2 0)" && echo 0 || echo 1) \
  "activations: --attention unfused keeps the scores (a s^2 b (2 e + 1) per layer)"
run_pm $M --mode inf --dtype fp32
w32=$(mem weights) kv32=$(mem kv_cache)
run_pm $M --mode inf --dtype bf16
ok $([ $rc -eq 0 ] && near "$w32" "$(x 4*p/1073741824)" &&
     near "$(mem weights)" "$(x 2*p/1073741824)" &&
     near "$(mem kv_cache)" "$(awk -v k="$kv32" 'BEGIN { printf "%.17g", k / 2 }')" &&
     near "$kv32" "$(x 2*36*1*1024*1280*4/1073741824)" && echo 0 || echo 1) \
  "inference: weights 4P against 2P bytes, and the KV cache (2 L b s h x 4 bytes in fp32) halves in bf16"
finish
