#!/bin/sh
# t1240-fp8-inputs.sh: fp8 GEMMs' quantised inputs: a GEMM as a serving engine calls it (its input quantised first) and alone (a training step's, whose casts are costed apart), by hand from perfmod kernel; under sequence parallelism the casts of what tp gathers on the rank's share, and the all-gathers in fp8; bf16 untouched; refusals.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 13

near () { awk -v a="$1" -v b="$2" -v e="$3" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= e)}'; }
ms () {  # perfmod kernel ARGS: tile-mlp's milliseconds on h100-sxm, or nothing
  run_pm kernel --gpu h100-sxm --predictor tile-mlp --format csv "$@"
  [ "$rc" -eq 0 ] && awk -F, 'NR == 2 && $1 == "tile-mlp" && $5 > 0 {print $5}' "$TMP/out"
}

# A skinny fp8 GEMM with a wide input (4,096 x 65,536 into 512): the engine's call quantises
# 268 M input elements first, one pass reading 2 bytes and writing 1 each; the GEMM alone is
# the call less that copy's time (both tile-mlp's, so the difference is exact)
call=$(ms --op gemm --m 4096 --k 65536 --n 512 --dtype fp8)
alone=$(ms --op gemm --m 4096 --k 65536 --n 512 --dtype fp8 --input-quantised)
quant=$(ms --op copy --bytes $((3 * 4096 * 65536)))
ok $(near "$alone" "$(awk -v c="${call:-0}" -v q="${quant:-0}" 'BEGIN {printf "%.7f", c - q}')" \
     0.000002; echo $?) "fp8 GEMM alone = the call less its input's quantisation ($call - $quant = $alone ms)"
ok $(awk -v a="${alone:-0}" -v c="${call:-0}" 'BEGIN {exit !(a > 0 && a < 0.8 * c)}'; echo $?) \
  "the wide input's quantisation is a fifth or more of the call ($alone of $call ms)"
run_pm kernel --gpu h100-sxm --predictor tile-mlp --op gemm --m 4096 --k 65536 --n 512 \
  --dtype fp8 --input-quantised
ok $(grep -q "the GEMM alone: the call less its input's quantisation" "$TMP/out"; echo $?) \
  "the table says the GEMM is the call less its input's quantisation"

# bf16 has nothing quantised: the same time either way
b1=$(ms --op gemm --m 4096 --k 65536 --n 512 --dtype bf16)
b2=$(ms --op gemm --m 4096 --k 65536 --n 512 --dtype bf16 --input-quantised)
ok $([ -n "$b1" ] && [ "$b1" = "$b2" ]; echo $?) "bf16: --input-quantised changes nothing ($b1, $b2 ms)"

# Never under one kernel's fixed cost: a tiny GEMM whose call is mostly launches
tiny=$(ms --op gemm --m 1 --k 1024 --n 1024 --dtype fp8 --input-quantised)
ok $(awk -v t="${tiny:-0}" 'BEGIN {exit !(t >= 0.0015)}'; echo $?) \
  "a 1 x 1024 x 1024 fp8 GEMM alone keeps a kernel's fixed cost ($tiny ms)"

# A training step's fp8 Linear (Transformer Engine), by hand: forward the GEMM alone and the
# cast of its input (4 bytes an element: read 16 bits, write the fp8 copy and its
# transpose), backward the data- and weight-gradient GEMMs alone and the gradient's cast
node_times () {  # strategy node: the node's forward and backward ms, one copy, from --per-op
  run_pm --model llama3-8b --gpu h100-sxm --mode train --batch 8 --seq 1024 --precision fp8 \
    --predictor tile-mlp --strategy "$1" --per-op
  awk -v n="$2" '$1 == n {print $8, $9; f = 1} END {exit !f}' "$TMP/out"
}
by_hand () {  # m in out fw_rows bw_rows: "fw bw" of a Linear(in -> out) over m rows whose
              # input casts cover fw_rows rows and gradient casts bw_rows
  g=$(ms --op gemm --m "$1" --k "$2" --n "$3" --dtype fp8 --input-quantised)
  d=$(ms --op gemm --m "$1" --k "$3" --n "$2" --dtype fp8 --input-quantised)
  w=$(ms --op gemm --m "$3" --k "$1" --n "$2" --dtype fp8 --input-quantised)
  ci=$(ms --op copy --bytes $((4 * $4 * $2)))
  cg=$(ms --op copy --bytes $((4 * $5 * $3)))
  awk -v g="${g:-0}" -v d="${d:-0}" -v w="${w:-0}" -v ci="${ci:-0}" -v cg="${cg:-0}" \
    'BEGIN {if (g > 0 && d > 0 && w > 0 && ci > 0 && cg > 0) printf "%.6f %.6f", g + ci, d + w + cg}'
}
same_times () {  # "fw bw" "fw bw": equal within rounding
  set -- $1 $2
  [ $# -eq 4 ] && near "$1" "$3" 0.000002 && near "$2" "$4" 0.000002
}
got=$(node_times mbs=1,kernels=te decoder_layers_0_linear_fc1)
want=$(by_hand 1024 4096 28672 1024 1024)
ok $(same_times "$got" "$want"; echo $?) \
  "Llama 3 8B's fc1 in fp8: the GEMMs alone and the casts, forward and backward ($got; by hand $want ms)"

# fp8-cs, per-tensor current scaling: each cast reads its input once more for the amax,
# 6 bytes an element, the GEMMs as fp8's
node_times_cs () {
  run_pm --model llama3-8b --gpu h100-sxm --mode train --batch 8 --seq 1024 --precision fp8-cs \
    --predictor tile-mlp --strategy mbs=1,kernels=te --per-op
  awk '$1 == "decoder_layers_0_linear_fc1" {print $8, $9; f = 1} END {exit !f}' "$TMP/out"
}
got=$(node_times_cs)
g=$(ms --op gemm --m 1024 --k 4096 --n 28672 --dtype fp8 --input-quantised)
d=$(ms --op gemm --m 1024 --k 28672 --n 4096 --dtype fp8 --input-quantised)
w=$(ms --op gemm --m 28672 --k 1024 --n 4096 --dtype fp8 --input-quantised)
ci=$(ms --op copy --bytes $((6 * 1024 * 4096)))
cg=$(ms --op copy --bytes $((6 * 1024 * 28672)))
want=$(awk -v g="${g:-0}" -v d="${d:-0}" -v w="${w:-0}" -v ci="${ci:-0}" -v cg="${cg:-0}" \
  'BEGIN {if (g > 0 && ci > 0 && cg > 0) printf "%.6f %.6f", g + ci, d + w + cg}')
ok $(same_times "$got" "$want"; echo $?) \
  "fp8-cs: fc1's casts move 6 bytes an element, the amax's pass besides ($got; by hand $want ms)"

# tp=2 with sequence parallelism: Transformer Engine quantises what a layer gathers before
# gathering it, so in fp8 the all-gathers (the GEMMs' inputs, again for the weight gradient,
# and the incoming gradients) move 1,024 tokens x 4,096 x 1 byte; the reduce-scatters of the
# 16-bit outputs and gradients, 2 bytes an element; in bf16, all of them 2
tpcomm () {  # precision: the layer's tp collectives' bytes, "kind:MB" sorted and unique
  run_pm --model llama3-8b --gpu h100-sxm --mode train --batch 8 --seq 1024 --precision "$1" \
    --predictor roofline --strategy tp=2,sp=1,mbs=1,kernels=te --per-op
  awk '$1 ~ /^decoder_layers_0_tp_/ && $3 == "COMM" {print $(NF-1) ":" $NF}' "$TMP/out" | sort -u |
    tr '\n' ' '
}
got=$(tpcomm fp8)
ok $([ "$got" = "allgather:4.1943MB reduce_scatter:8.38861MB " ]; echo $?) \
  "fp8, tp=2, sp: all-gathers of 1-byte elements, reduce-scatters of 2-byte ones ($got)"
got=$(tpcomm bf16)
ok $([ "$got" = "allgather:8.38861MB reduce_scatter:8.38861MB " ]; echo $?) \
  "bf16: both of 2-byte elements ($got)"

# ... and the casts before those gathers run on the rank's half of the 1,024 tokens:
# linear_qkv's input forward (its gradient, its heads' share, on all 1,024 rows backward),
# linear_proj's incoming gradient backward (its input, the heads' outputs, on all 1,024)
got=$(node_times tp=2,sp=1,mbs=1,kernels=te decoder_layers_0_linear_qkv)
want=$(by_hand 1024 4096 3072 512 1024)
ok $(same_times "$got" "$want"; echo $?) \
  "tp=2, sp: linear_qkv's input cast on the rank's 512 tokens, then gathered ($got; by hand $want ms)"
got=$(node_times tp=2,sp=1,mbs=1,kernels=te decoder_layers_0_linear_proj)
want=$(by_hand 1024 2048 4096 1024 512)
ok $(same_times "$got" "$want"; echo $?) \
  "linear_proj: its gradient cast on the rank's 512 tokens ($got; by hand $want ms)"

expect_one_line 2 "input-quantised: a GEMM's" "--input-quantised on a norm is refused" -- \
  kernel --op norm --rows 8 --cols 8 --gpu h100-sxm --input-quantised
expect_one_line 2 "copy needs --bytes" "--op copy without --bytes is refused" -- \
  kernel --op copy --gpu h100-sxm
finish
