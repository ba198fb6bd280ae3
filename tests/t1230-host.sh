#!/bin/sh
# t1230-host.sh: the host's side of a training step, by hand: each kernel launched at host_us, fp8 GEMMs' quantisation launched too, MoE dispatch's host synchronisation; host_us=0; refusals; scripts/published-keys.py's sweep over the published runs.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 14

near () { awk -v a="$1" -v b="$2" -v e="$3" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= e)}'; }
# one micro-batch of 16 tokens on one H100, roofline: every kernel far shorter than a
# launch of 1 ms, so the forward is its launches x 1 ms and the last kernel's time
stage () {  # model layers precision host_us: "fw_ms bw_ms host_wait_ms step_ms"
  run_pm --model "$1" --gpu h100 --mode train --precision "$3" --batch 1 --seq 16 --layers "$2" \
    --predictor roofline --format json --strategy "kernels=te,host_us=$4"
  jq -r '.predictions[0] | "\(.stages[0].fw_ms) \(.stages[0].bw_ms) \(.host_wait_ms) \(.step_ms)"' \
    "$TMP/out"
}
fw_of () {  # model layers precision node: the node's forward ms, one copy, from --per-op
  run_pm --model "$1" --gpu h100 --mode train --precision "$3" --batch 1 --seq 16 --layers "$2" \
    --predictor roofline --per-op --strategy kernels=te,host_us=1000
  awk -v n="$4" '$1 == n {print $8; f = 1} END {exit !f}' "$TMP/out"
}

# Llama 3 8B, Megatron-Core's layer in bf16: the embedding, 11 kernels a layer (two norms,
# qkv, rotary, attention, proj, two residual adds, fc1, SwiGLU, fc2), the final norm, the
# output layer and the loss: 1 + 11 x 2 + 3 = 26 launches
ce=$(fw_of llama3-8b 2 bf16 cross_entropy)
set -- $(stage llama3-8b 2 bf16 1000)
ok $(near "$1" "$(awk -v c="$ce" 'BEGIN {printf "%.7f", 26 + c}')" 0.000002; echo $?) \
  "Llama 3 8B, 2 layers, host_us=1000: the forward is 26 launches and the loss's kernel ($1 ms)"
# eight layers: the runs of a layer past the third extrapolated, 1 + 11 x 8 + 3 = 92 launches
set -- $(stage llama3-8b 8 bf16 1000)
ok $(near "$1" "$(awk -v c="$ce" 'BEGIN {printf "%.7f", 92 + c}')" 0.000002; echo $?) \
  "8 layers: 92 launches ($1 ms)"
# fp8: each GEMM's input cast to fp8 first, one more launch for each of the 4 GEMMs a layer
# (not the output layer's: Megatron-Core's own, bf16): 26 + 8 = 34
set -- $(stage llama3-8b 2 fp8 1000)
ce8=$(fw_of llama3-8b 2 fp8 cross_entropy)
ok $(near "$1" "$(awk -v c="$ce8" 'BEGIN {printf "%.7f", 34 + c}')" 0.000002; echo $?) \
  "fp8: each GEMM's cast launched too, 34 launches ($1 ms)"
# fp8-cs, per-tensor current scaling: each cast is three launches (amax, scale, cast): 26 + 3 x 8
set -- $(stage llama3-8b 2 fp8-cs 1000)
ok $(near "$1" "$(awk -v c="$ce8" 'BEGIN {printf "%.7f", 50 + c}')" 0.000002; echo $?) \
  "fp8-cs: each cast three launches, 50 ($1 ms)"

# Qwen3-30B-A3B, one MoE layer in bf16: the embedding; 10 kernels up to the router (two
# norms, qkv, q and k norms, rotary, attention, proj, residual add, router); the top-k with
# 9 more launches, the load-balancing loss with 14, the permutation with 17 (the dispatch's
# preprocessing, copies to the host, the probabilities' all-to-all, the chunks sorted); each
# reached expert's fc1 and fc2 and one SwiGLU over them all; the unpermutation with 3; the
# residual add; the final norm, output layer and loss: 63 + 2 x experts.  The host waits at
# the permutation for the counts, so its kernel's time is not hidden behind the next launch.
run_pm --model qwen3-30b-a3b --gpu h100 --mode train --precision bf16 --batch 1 --seq 16 \
  --layers 1 --predictor roofline --per-op --strategy kernels=te,host_us=1000
set -- $(awk '$1 == "decoder_layers_0_experts_fc1" {c = $7} $1 == "decoder_layers_0_permute" {p = $8}
              $1 == "cross_entropy" {e = $8} END {if (c && p && e) print c, p, e; else exit 1}' "$TMP/out")
copies=$1 perm=$2 qce=$3
want=$(awk -v c="$copies" -v p="$perm" -v e="$qce" \
  'BEGIN {printf "%.7f", 63 + 2 * c + p + e}')
set -- $(stage qwen3-30b-a3b 1 bf16 1000)
ok $(near "$1" "$want" 0.000002; echo $?) \
  "Qwen3-30B-A3B, one MoE layer: its launches with $copies experts' and the dispatch's wait ($1 ms, by hand $want)"

# host_us=0: the host never holds the device up; the default (7 us) waits on this tiny step
set -- $(stage llama3-8b 2 bf16 0)
zero_wait=$3 zero_step=$4
run_pm --model llama3-8b --gpu h100 --mode train --precision bf16 --batch 1 --seq 16 --layers 2 \
  --predictor roofline --format json --strategy kernels=te
set -- $(jq -r '.predictions[0] | "\(.host_wait_ms) \(.step_ms) \(.strategy.spec)"' "$TMP/out" 2>/dev/null)
ok $([ "$zero_wait" = 0 ] && awk -v w="$1" -v s="$2" -v z="$zero_step" \
       'BEGIN {exit !(w > 0 && s > z && s - w - z < 1e-6 && s - w - z > -1e-6)}'; echo $?) \
  "host_us=0 waits 0 ms; the default waits $1 ms, exactly what its step adds"
ok $(case "$3" in *host_us*) echo 1 ;; *) echo 0 ;; esac) \
  "the default host_us is not spelt out in the spec"

run_pm --model llama3-8b --gpu h100 --mode train --batch 8 --predictor roofline --strategy dp=8
a=$(grep -c '^assumed: .*each kernel launched from the host in 7 us' "$TMP/out")
run_pm --model llama3-8b --gpu h100 --mode train --batch 8 --predictor roofline --strategy dp=8,host_us=3
b=$(grep -c '^assumed: .*launched from the host' "$TMP/out"; grep -c 'host_us=3' "$TMP/out")
ok $([ "$a" = 1 ] && [ "$(echo $b)" = "0 1" ]; echo $?) \
  "the assumed line says the default launch cost; a given host_us is in the strategy instead"

expect_one_line 2 "host_us=-1: expected the host's microseconds per kernel launch" \
  "a negative host_us is refused" -- --model llama3-8b --gpu h100 --mode train --strategy host_us=-1
expect_one_line 2 "host_us=7us: expected" "a host_us with a unit is refused by its value" -- \
  --model llama3-8b --gpu h100 --mode train --strategy host_us=7us
expect_one_line 2 "host_us=5000: expected" "a host_us past 1000 us is refused" -- \
  --model llama3-8b --gpu h100 --mode train --strategy host_us=5000

# scripts/published-keys.py: a sweep of host_us over every published run; a run that sets
# a key keeps its own (one run with host_us=3 added by hand first)
keys="${top_srcdir:-$(dirname "$0")/..}/scripts/published-keys.py"
runs="${top_srcdir:-$(dirname "$0")/..}/tests/published-runs.csv"
awk -F, 'BEGIN {OFS = ","} /^#/ || $1 == "id" || done {print; next}
         {$24 = ($24 == "" ? "host_us=3" : $24 ";host_us=3"); done = 1; print}' "$runs" \
  > "$TMP/own.csv"
python3 "$keys" host_us=1000 "$TMP/own.csv" "$TMP/swept.csv" 2>"$TMP/err"
n=$(grep -vc '^#' "$runs"); n=$((n - 1))
ok $([ "$(grep -c 'host_us=1000' "$TMP/swept.csv")" = $((n - 1)) ] &&
     [ "$(grep -c 'host_us=3' "$TMP/swept.csv")" = 1 ]; echo $?) \
  "published-keys.py adds host_us=1000 to the $((n - 1)) runs without one, not to the one with its own"
run_pm reproduce --table published --published "$TMP/own.csv" --predictor roofline --format csv
rc1=$rc; cp "$TMP/out" "$TMP/own.out"
run_pm reproduce --table published --published "$TMP/swept.csv" --predictor roofline --format csv
slower=$(awk -F, 'NR == FNR {t[$1] = $17; next} $1 != "id" && ($1 in t) && $17 > t[$1] {n++}
                  END {print n + 0}' "$TMP/own.out" "$TMP/out")
same=$(awk -F, 'NR == FNR {t[$1] = $17; next} FNR == 2 && $17 == t[$1] {print 1}' \
         "$TMP/own.out" "$TMP/out")
ok $([ "$rc1" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$slower" -eq $((n - 1)) ] && [ "$same" = 1 ]
     echo $?) "with host_us=1000 the $((n - 1)) swept runs are predicted slower ($slower), the other as before"
python3 "$keys" 'host_us' "$runs" "$TMP/bad.csv" 2>"$TMP/err"
ok $([ $? -eq 2 ] && grep -q "'host_us': expected KEY=VALUE" "$TMP/err" && [ ! -e "$TMP/bad.csv" ]
     echo $?) "a key without a value is refused, naming it, and nothing is written"
