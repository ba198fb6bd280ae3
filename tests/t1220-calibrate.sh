#!/bin/sh
# t1220-calibrate.sh: perfmod calibrate on a GPU's measured GEMMs (a table made 1.5 x the roofline), the correction by hand, applied by --calibration in kernel, predict and eval (on that GPU alone), "calibrated on N shapes"; the benchmark script's plan; bad input.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 35

# An H100 that runs every bf16 GEMM at 1.5 x the roofline's time, 40 shapes
D="$TMP/md/aiconfigurator/h100_sxm/gemm/x/1"
mkdir -p "$D"
echo framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency >"$D/gemm_perf.csv"
i=0
for m in 16 256 2048 8192; do
  for nk in "1024 1024" "4096 1024" "1024 4096" "4096 4096" "8192 2048" "2048 8192" "12288 4096" \
            "4096 14336" "6144 6144" "16384 2048"; do
    set -- $nk
    # perfmod's LINEAR (M, N, K) is the table's (m, k, n)
    ms=$("$PERFMOD" kernel --op gemm --gpu h100 --dtype bf16 --m "$m" --n "$2" --k "$1" \
           --predictor roofline --format csv 2>/dev/null | awk -F, 'NR == 2 { printf "%.9g", 1.5 * $5 }')
    echo "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,$m,$1,$2,$ms" >>"$D/gemm_perf.csv"
    i=$((i + 1))
  done
done

run_pm calibrate --data "$TMP/md" --gpu h100 --predictor roofline --seed 1 --out "$TMP/h100.cal"
cp "$TMP/out" "$TMP/cal.out"
n=$(sed -n 's/.* calibrated on \([0-9]*\) shapes .*/\1/p' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ -n "$n" ] && [ "$n" -ge 20 ] && [ "$n" -lt 40 ] &&
     grep -q '^gpu = NVIDIA_H100_80GB_HBM3$' "$TMP/h100.cal" && grep -q '^predictor = roofline$' "$TMP/h100.cal"; echo $?) \
  "calibrate: roofline on the H100 calibrated on $n shapes (eval's 80 %), said and written"
# ln(measured / predicted) = ln 1.5 on every shape: b = 0 and a = n/(n+2) ln 1.5 (the prior's
# two pseudo-shapes), by hand
ok $(awk -v n="$n" '$1 == "group" && $2 == "FC" && $3 == "bf16" { f = 1; a = n / (n + 2) * log(1.5)
       exit !($4 == n && ($5 - a)^2 < 1e-14 && $6^2 < 1e-14 && $7^2 < 1e-14) } END { exit !f }' "$TMP/h100.cal"; echo $?) \
  "the FC bf16 group: a = n/(n+2) ln 1.5, b = c = 0, by hand"
ok $(awk '$1 == "group" && $2 == "FC" && $3 == "bf16" { f = NF == 11 && $8 > 0 && $8 < $9 && $10 > 0 && $10 < $11 }
       END { exit !f }' "$TMP/h100.cal"; echo $?)   "... with the predicted times and intensities it was fitted on (two ranges)"
# The slopes are not extrapolated: a group with a = 2, b = 0.5 fitted on 0.01-1 ms corrects a
# kernel of t ms inside by e^2 sqrt(t), one of 9 ms (16384^3) as at 1 ms (e^2); without the
# ranges (an older file) by e^2 sqrt(9).  (Every factor above 1: none meets the floor.)
gemm_ms () {  # gemm_ms N [CAL]: the roofline's (or the calibrated) ms of an N^3 bf16 GEMM on H100
  "$PERFMOD" kernel --op gemm --gpu h100 --dtype bf16 --m "$1" --n "$1" --k "$1" --predictor roofline \
    --format csv ${2:+--calibration "$2"} 2>/dev/null | awk -F, 'NR == 2 { print $5 }'
}
printf 'gpu = NVIDIA_H100_80GB_HBM3\npredictor = roofline\ngroup FC bf16 10 2 0.5 0 0.01 1 1 100000\n' >"$TMP/range.cal"
printf 'gpu = NVIDIA_H100_80GB_HBM3\npredictor = roofline\ngroup FC bf16 10 2 0.5 0\n' >"$TMP/open.cal"
r4=$(gemm_ms 4096) c4=$(gemm_ms 4096 "$TMP/range.cal") r16=$(gemm_ms 16384) c16=$(gemm_ms 16384 "$TMP/range.cal")
o16=$(gemm_ms 16384 "$TMP/open.cal")
ok $(awk -v r4="$r4" -v c4="$c4" -v r16="$r16" -v c16="$c16" -v o16="$o16" 'BEGIN {
       e2 = exp(2); exit !(r4 > 0.01 && r4 < 1 && (c4 / (e2 * r4 * sqrt(r4)) - 1)^2 < 1e-10 && r16 > 1 &&
              (c16 / (e2 * r16) - 1)^2 < 1e-10 && (o16 / (e2 * r16 * sqrt(r16)) - 1)^2 < 1e-10) }'; echo $?) \
  "calibration ranges: inside corrected by the slope ($r4 -> $c4 ms), beyond as at the edge ($r16 -> $c16, not $o16)"
K="kernel --op gemm --gpu h100 --dtype bf16 --m 512 --n 5120 --k 3072 --predictor roofline --format csv"
run_pm $K
base=$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")
run_pm $K --calibration "$TMP/h100.cal"
cal=$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")
ok $(awk -v b="$base" -v c="$cal" -v n="$n" 'BEGIN { f = exp(n / (n + 2) * log(1.5)); exit !(b > 0 && (c / b / f - 1)^2 < 1e-12) }'; echo $?) \
  "kernel --calibration: a shape it never saw at exp(a) x the roofline ($base -> $cal ms)"
run_pm kernel --op gemm --gpu a100 --dtype bf16 --m 512 --n 5120 --k 3072 --predictor roofline --format csv
a100=$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")
run_pm kernel --op gemm --gpu a100 --dtype bf16 --m 512 --n 5120 --k 3072 --predictor roofline --format csv --calibration "$TMP/h100.cal"
ok $([ "$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")" = "$a100" ] && awk -v t="$a100" 'BEGIN { exit !(t > 0) }'
     echo $?) "another GPU's prediction is left as it was ($a100 ms)"
run_pm kernel --op gemm --gpu h100 --dtype fp8 --m 512 --n 5120 --k 3072 --predictor roofline --format csv
f8=$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")
run_pm kernel --op gemm --gpu h100 --dtype fp8 --m 512 --n 5120 --k 3072 --predictor roofline --format csv --calibration "$TMP/h100.cal"
ok $([ "$(awk -F, 'NR == 2 { print $5 }' "$TMP/out")" = "$f8" ] && awk -v t="$f8" 'BEGIN { exit !(t > 0) }'
     echo $?) "... and a dtype it has no group of (fp8, $f8 ms)"
run_pm kernel --op gemm --gpu h100 --dtype bf16 --m 512 --n 5120 --k 3072 --predictor roofline --calibration "$TMP/h100.cal"
ok $(grep -q "^assumed: .*roofline calibrated on $n shapes of NVIDIA_H100_80GB_HBM3" "$TMP/out"; echo $?) \
  "the table says what was calibrated, on how many shapes"

# eval on the held-out 20 %: 33 % off before, within the prior's shrink after
run_pm eval --data "$TMP/md" --predictor roofline --split holdout
before=$(awk '$1 == "roofline" && $4 == "bf16" { print $8 }' "$TMP/out")
run_pm eval --data "$TMP/md" --predictor roofline --split holdout --calibration "$TMP/h100.cal"
after=$(awk '$1 == "roofline" && $4 == "bf16" { print $8 }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && awk -v b="$before" -v a="$after" -v n="$n" 'BEGIN { want = 100 * (1 - exp(-2 / (n + 2) * log(1.5)))
       exit !((b - 100 / 3)^2 < 0.01 && (a - want)^2 < 0.01) }' && grep -q 'calibrated on' "$TMP/err"; echo $?) \
  "eval --calibration on the held-out shapes: median error $before -> $after % (1 - 1.5^(-2/(n+2)))"
# predict: a whole model's step grows with it, the assumed: line says so
run_pm --model gpt3-2.7b --gpu h100 --batch 1 --seq 512 --predictor roofline --format json
p0=$(jq '.predictions[0].e2e_ms' "$TMP/out")
run_pm --model gpt3-2.7b --gpu h100 --batch 1 --seq 512 --predictor roofline --format json --calibration "$TMP/h100.cal"
ok $([ "$rc" -eq 0 ] && jq -e --argjson p "$p0" '.predictions[0].e2e_ms > $p and (.assumed | test("roofline calibrated on"))' \
       "$TMP/out" >/dev/null; echo $?) "predict --calibration: the run's GEMMs corrected, said in assumed"

run_pm calibrate --data "$TMP/md" --gpu h100 --predictor roofline --shapes 5 --seed 2 --out "$TMP/five.cal"
ok $([ "$rc" -eq 0 ] && grep -q '^shapes = 5$' "$TMP/five.cal" && grep -q 'calibrated on 5 shapes' "$TMP/out"; echo $?) \
  "--shapes 5: five of the shapes, drawn by the seed"

# the benchmark script's plan, without a GPU
python3 "$top_srcdir/scripts/calibrate-bench.py" --out "$TMP/cb" --dry-run --shapes 7 >"$TMP/plan" 2>&1
# each a shape perfmod predicts (the table's m, n, k: perfmod's M, K, N)
grep '^bf16 ' "$TMP/plan" | while read -r d m n k; do
  "$PERFMOD" kernel --op gemm --gpu h100 --dtype bf16 --m "$m" --n "$k" --k "$n" --predictor roofline \
    --format csv 2>/dev/null | awk -F, 'NR == 2 && $5 > 0 { print "ok" }'
done >"$TMP/planned"
ok $([ "$(grep -c '^bf16 [0-9]* [0-9]* [0-9]*$' "$TMP/plan")" = 7 ] && [ "$(grep -c ok "$TMP/planned")" = 7 ] &&
     [ ! -e "$TMP/cb" ]; echo $?) \
  "calibrate-bench.py --dry-run: the 7 GEMMs it would measure, each one perfmod predicts; nothing written"

# the collectives' plan, without GPUs: each one perfmod predicts (bytes: 2 x fp16 elements)
python3 "$top_srcdir/scripts/calibrate-bench.py" --out "$TMP/cc" --collectives --dry-run --gpus 8 --sizes 20:22 \
  >"$TMP/cplan" 2>"$TMP/cplan.err"
while read -r op g n; do
  "$PERFMOD" kernel --op collective --coll "$op" --bytes $((2 * n)) --ranks "$g" --gpu h100-sxm --dtype fp16 \
    --predictor roofline --format csv 2>/dev/null | awk -F, 'NR == 2 && $5 > 0 { print "ok" }'
done <"$TMP/cplan" >"$TMP/cplanned"
ok $([ "$(grep -c '^[a-z_]* [248] [0-9]*$' "$TMP/cplan")" = 36 ] && [ "$(grep -c ok "$TMP/cplanned")" = 36 ] &&
     grep -q '^36 collectives to measure$' "$TMP/cplan.err" && [ ! -e "$TMP/cc" ]; echo $?) \
  "calibrate-bench.py --collectives --dry-run: 4 collectives x 2, 4, 8 ranks x 3 sizes, each one perfmod predicts"
# the table it writes is one perfmod calibrate reads: its writer and columns, the plan's rows
# at twice the roofline's time, in a folder that names no GPU (the device column's H100),
# calibrated on all it keeps
CB="$TMP/cw/nccl"
mkdir -p "$CB"
while read -r op g n; do
  ms=$("$PERFMOD" kernel --op collective --coll "$op" --bytes $((2 * n)) --ranks "$g" --gpu h100 --dtype fp16 \
         --predictor roofline --format csv 2>/dev/null | awk -F, 'NR == 2 { printf "%.9g", 2 * $5 }')
  echo "$op $g $n $ms"
done <"$TMP/cplan" >"$TMP/crows"
python3 - "$top_srcdir/scripts/calibrate-bench.py" "$CB/nccl_perf.csv" "$TMP/crows" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("cb", sys.argv[1])
cb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cb)
rows = [("pytorch", "2.27.3", "NVIDIA H100 80GB HBM3", op, "NCCL", "half", int(g), int(n), ms)
        for op, g, n, ms in (line.split() for line in open(sys.argv[3]))]
cb.write_table(sys.argv[2], cb.NCCL_HEADER, rows)
PY
run_pm calibrate --data "$TMP/cw" --gpu h100 --predictor roofline --out "$TMP/cw.cal"
m=$(sed -n 's/.* calibrated on \([0-9]*\) shapes (of \([0-9]*\) measured.*/\1 \2/p' "$TMP/out")
ok $([ "$rc" -eq 0 ] && set -- $m && [ "$1" = "$2" ] && [ "$1" -ge 20 ] &&
     awk -v n="$1" '$1 == "group" && $2 == "COMM" { f = 1; exit !(($5 - n / (n + 2) * log(2))^2 < 1e-10) }
       END { exit !f }' "$TMP/cw.cal" && [ ! -e "$CB/nccl_perf.csv.tmp" ]; echo $?) \
  "calibrate-bench.py's nccl_perf.csv: read by perfmod calibrate (${m%% *} shapes, all outside eval's 20 %), a = n/(n+2) ln 2"

# fused attention's plan, without a GPU: 6 prefills and 6 decode steps, each one perfmod
# predicts; the tables its writer writes, at twice the roofline's time, are read by perfmod
# calibrate into one ATTENTION group whose intercept is ln 2 shrunk by its two pseudo-shapes
python3 "$top_srcdir/scripts/calibrate-bench.py" --out "$TMP/ca" --attention --dry-run --shapes 6 \
  >"$TMP/aplan" 2>"$TMP/aplan.err"
while read -r kind b t h g d; do
  if [ "$kind" = prefill ]; then
    set -- --op attention --batch "$b" --seq "$t"
  else
    set -- --op decode --batch "$b" --kv-len "$t"
  fi
  ms=$("$PERFMOD" kernel "$@" --heads "$h" --kv-heads "$g" --head-dim "$d" --gpu h100 --dtype bf16 \
         --predictor roofline --format csv 2>/dev/null | awk -F, 'NR == 2 && $5 > 0 { printf "%.9g", 2 * $5 }')
  echo "$kind $b $t $h $g $d $ms"
done <"$TMP/aplan" >"$TMP/arows"
ok $([ "$(grep -c '^prefill [0-9 ]*$' "$TMP/aplan")" = 6 ] && [ "$(grep -c '^decode [0-9 ]*$' "$TMP/aplan")" = 6 ] &&
     [ "$(awk 'NF == 7' "$TMP/arows" | wc -l)" = 12 ] && grep -q '^12 attention kernels to measure$' "$TMP/aplan.err" &&
     [ ! -e "$TMP/ca" ]; echo $?) \
  "calibrate-bench.py --attention --dry-run: 6 prefills and 6 decode steps, each one perfmod predicts; nothing written"
python3 - "$top_srcdir/scripts/calibrate-bench.py" "$TMP/aw/attention" "$TMP/arows" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("cb", sys.argv[1])
cb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cb)
rows = [cb.attention_row("2.9", "NVIDIA H100 80GB HBM3", k, int(b), int(t), int(h), int(g), int(d), ms)
        for k, b, t, h, g, d, ms in (line.split() for line in open(sys.argv[3]))]
cb.write_attention(sys.argv[2], rows)
PY
run_pm calibrate --data "$TMP/aw" --gpu h100 --predictor roofline --out "$TMP/aw.cal"
ok $([ "$rc" -eq 0 ] && [ -s "$TMP/aw/attention/context_attention_perf.csv" ] &&
     [ -s "$TMP/aw/attention/generation_attention_perf.csv" ] &&
     awk '$1 == "group" && $2 == "ATTN" && $3 == "bf16" { n = $4; f = 1
            exit !(n >= 3 && ($5 - n / (n + 2) * log(2))^2 < 1e-10) } END { exit !f }' "$TMP/aw.cal"; echo $?) \
  "calibrate-bench.py's attention tables: read by perfmod calibrate into one bf16 ATTN group, a = n/(n+2) ln 2 ($(awk '$1 == "group" { print $2, $3, $4 }' "$TMP/aw.cal"))"

# bad input
# Collectives: an H100 whose NCCL all-reduces and all-gathers (2, 4, 8 GPUs, 1 MiB-512 MiB)
# take 1.5 x the roofline's time; one COMM group, ln of the ranks for its FLOPs per byte:
# a = n/(n+2) ln 1.5, b = c = 0, by hand, and kernel --op collective corrected by exp(a)
C="$TMP/mc/aiconfigurator/h100_sxm/comm/nccl/x"
mkdir -p "$C"
echo framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency >"$C/nccl_perf.csv"
for op in all_reduce all_gather; do
  for g in 2 4 8; do
    for sz in 1048576 8388608 67108864 536870912; do
      echo "A,1,NVIDIA H100 80GB HBM3,$op,NCCL,half,$g,$sz,1" >>"$C/nccl_perf.csv"
    done
  done
done
run_pm eval --data "$TMP/mc" --table nccl --predictor roofline --format csv --per-op
awk -F, 'NR > 1 { printf "%s,%.15g\n", $3, 1.5 * $18 }' "$TMP/out" >"$TMP/nccl.ms"
awk -F, -v OFS=, 'NR == FNR { ms[$1] = $2; next } FNR > 1 { $9 = ms[FNR] } { print }' \
  "$TMP/nccl.ms" "$C/nccl_perf.csv" >"$TMP/nccl.csv" && mv "$TMP/nccl.csv" "$C/nccl_perf.csv"
run_pm calibrate --data "$TMP/mc" --table nccl --gpu h100-sxm --predictor roofline --seed 1 --out "$TMP/nccl.cal"
m=$(sed -n 's/.* calibrated on \([0-9]*\) shapes .*/\1/p' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ -n "$m" ] && [ "$m" -ge 12 ] && awk -v n="$m" '$1 == "group" && $2 == "COMM" { f = 1
       exit !($4 == n && ($5 - n / (n + 2) * log(1.5))^2 < 1e-12 && $6^2 < 1e-12 && $7^2 < 1e-12 && $10 == 2 && $11 == 8) }
       END { exit !f }' "$TMP/nccl.cal"; echo $?) \
  "calibrate on collectives: one COMM group on $m shapes, a = n/(n+2) ln 1.5, b = c = 0, ranks 2-8 fitted on"
coll_ms () {
  "$PERFMOD" kernel --op collective --coll all_reduce --bytes 33554432 --ranks 4 --gpu h100-sxm --dtype fp16 \
    --predictor roofline --format csv ${1:+--calibration "$1"} 2>/dev/null | awk -F, 'NR == 2 { print $5 }'
}
c0=$(coll_ms) c1=$(coll_ms "$TMP/nccl.cal")
ok $(awk -v b="$c0" -v c="$c1" -v n="$m" 'BEGIN { exit !(b > 0 && (c / b / exp(n / (n + 2) * log(1.5)) - 1)^2 < 1e-10) }'; echo $?) \
  "kernel --op collective --calibration: a size it never saw at exp(a) x ($c0 -> $c1 ms)"
# a step's collectives: with a COMM group for the GPU, one node's take the predictor's own
# estimate corrected (a = 0: as predicted; a = ln 2: twice that), tp's and dp's alike; a
# calibration of GEMMs alone leaves them NCCL's model, and so does a group over two nodes
for c in "one 0" "two 0.693147180559945"; do
  set -- $c
  printf 'gpu = NVIDIA_H100_80GB_HBM3\npredictor = roofline\nshapes = 30\ngroup COMM fp16 30 %s 0 0\n' "$2" \
    >"$TMP/$1.cal"
done
printf 'gpu = NVIDIA_H100_80GB_HBM3\npredictor = roofline\nshapes = 30\ngroup FC bf16 30 0.7 0 0\n' >"$TMP/fc.cal"
comm_of () {   # comm_of STRATEGY NODES [CALIBRATION]: the step's tp and dp collectives, ms
  "$PERFMOD" --model llama3-8b --gpu h100 --mode train --batch 16 --seq 4096 --predictor roofline \
    --nodes "$2" --strategy "$1" --format json ${3:+--calibration "$3"} 2>/dev/null |
    jq -r '.predictions[0].comm_ms | "\(.tp) \(.dp)"'
}
t0=$(comm_of tp=8,dp=1 1) t1=$(comm_of tp=8,dp=1 1 "$TMP/one.cal") t2=$(comm_of tp=8,dp=1 1 "$TMP/two.cal")
d1=$(comm_of tp=1,dp=8 1 "$TMP/one.cal") d2=$(comm_of tp=1,dp=8 1 "$TMP/two.cal")
tf=$(comm_of tp=8,dp=1 1 "$TMP/fc.cal")
ok $(echo "$t0 $t1 $t2 $d1 $d2 $tf" | awk '{ exit !($1 > 0 && $3 > 0 && $3 != $1 && ($5 / $3 - 2)^2 < 1e-18 &&
       $8 > 0 && ($10 / $8 - 2)^2 < 1e-18 && $11 == $1) }'; echo $?) \
  "a step's collectives with a COMM calibration: the predictor's estimate x exp(a) (tp $t0 -> $t1 -> $t2 ms, dp $d1 -> $d2; GEMMs alone: $tf)"
n0=$(comm_of tp=1,dp=16 2) n2=$(comm_of tp=1,dp=16 2 "$TMP/two.cal")
ok $([ -n "$n0" ] && [ "$n0" = "$n2" ]; echo $?) "... not over two nodes (the tables measure one): dp $n0 ms either way"
# ... and in a search on two threads (tile-mlp's collectives loaded before them): the same
# answer as one thread, not the uncalibrated one
sed 's/^predictor = roofline/predictor = tile-mlp/' "$TMP/two.cal" >"$TMP/twotm.cal"
for j in 1 2; do
  run_pm search --model llama3-8b --gpu h100 --gpus 8 --global-batch 16 --seq 4096 --predictor tile-mlp \
    --calibration "$TMP/twotm.cal" --top 5 --format csv --jobs $j
  cp "$TMP/out" "$TMP/cs$j.csv"
done
run_pm search --model llama3-8b --gpu h100 --gpus 8 --global-batch 16 --seq 4096 --predictor tile-mlp \
  --top 5 --format csv --jobs 2
ok $([ "$rc" -eq 0 ] && [ "$(grep -c . "$TMP/cs1.csv")" -eq 6 ] && cmp -s "$TMP/cs1.csv" "$TMP/cs2.csv" &&
     ! cmp -s "$TMP/cs1.csv" "$TMP/out"; echo $?) \
  "search --calibration (collectives) on 1 and 2 threads: the same answer, not the uncalibrated one"
# the seed draws which collectives (their operation, ranks and bytes are their shape)
run_pm calibrate --data "$TMP/mc" --table nccl --gpu h100-sxm --predictor tile-mlp --shapes 6 --seed 1 --out "$TMP/s1.cal"
run_pm calibrate --data "$TMP/mc" --table nccl --gpu h100-sxm --predictor tile-mlp --shapes 6 --seed 2 --out "$TMP/s2.cal"
ok $([ "$rc" -eq 0 ] && ! cmp -s "$TMP/s1.cal" "$TMP/s2.cal" && grep -q '^group COMM fp16 6 ' "$TMP/s2.cal"; echo $?) \
  "calibrate --shapes 6: two seeds, two draws of the collectives"
# a PCIe server's collectives are left out, said; nothing else to fit: exit 1
L="$TMP/ml/aiconfigurator/l40s/comm/nccl/x"
mkdir -p "$L"
sed 's/NVIDIA H100 80GB HBM3/NVIDIA L40S/' "$C/nccl_perf.csv" >"$L/nccl_perf.csv"
run_pm calibrate --data "$TMP/ml" --table nccl --gpu l40s --predictor roofline --out "$TMP/l40s.cal"
ok $([ "$rc" -eq 1 ] && grep -q "collectives of l40s left out: on PCIe servers" "$TMP/err" &&
     [ ! -e "$TMP/l40s.cal" ]; echo $?) "calibrate on a PCIe server's collectives: left out, said, exit 1, no file"
# a collective table whose folder names no GPU and whose device gpus.d does not know
mkdir -p "$TMP/cu/mine"
sed 's/NVIDIA H100 80GB HBM3/NVIDIA Foo 9000/' "$CB/nccl_perf.csv" >"$TMP/cu/mine/nccl_perf.csv"
expect_fail 2 "cu/mine/nccl_perf.csv:2: device 'NVIDIA Foo 9000' is not in gpus.d" \
  "calibrate on collectives of a GPU gpus.d lacks: file:line and the device named, exit 2" -- \
  calibrate --data "$TMP/cu" --gpu h100 --predictor roofline --out "$TMP/cu.cal"
ok $([ ! -e "$TMP/cu.cal" ]; echo $?) "... and leaves no file"
python3 "$top_srcdir/scripts/calibrate-bench.py" --out "$TMP/cc" --collectives --dry-run --gpus 8 --sizes 9 \
  >"$TMP/out" 2>"$TMP/err"
ok $([ $? -ne 0 ] && grep -q -- "--sizes '9': expected LO:HI" "$TMP/err" && [ ! -s "$TMP/out" ] && [ ! -e "$TMP/cc" ]; echo $?) \
  "calibrate-bench.py --sizes 9: refused, said, nothing listed or written"
python3 "$top_srcdir/scripts/calibrate-bench.py" --out "$TMP/cc" --attention --collectives --dry-run \
  >"$TMP/out" 2>"$TMP/err"
ok $([ $? -ne 0 ] && grep -q -- "--attention or --collectives, one at a time" "$TMP/err" && [ ! -s "$TMP/out" ] &&
     [ ! -e "$TMP/cc" ]; echo $?) \
  "calibrate-bench.py --attention with --collectives: refused, said, nothing listed or written"
expect_one_line 2 "calibrate needs --data DIR" "calibrate without --gpu: refused" -- \
  calibrate --data "$TMP/md" --out "$TMP/x.cal"
expect_one_line 1 "no measured kernel of a100-sxm-80gb" "calibrate on a GPU the tables have no rows of: said, exit 1" -- \
  calibrate --data "$TMP/md" --gpu a100 --predictor roofline --out "$TMP/y.cal"
ok $([ ! -e "$TMP/y.cal" ]; echo $?) "... and leaves no file"
printf 'gpu = h100\npredictor = roofline\ngroup FC bf16 3 x 0\n' >"$TMP/bad.cal"
expect_one_line 2 "bad.cal:3: '" "a calibration's bad group line: refused at file:line" -- \
  kernel --op gemm --gpu h100 --m 64 --n 64 --k 64 --calibration "$TMP/bad.cal"
printf 'gpu = h100\npredictor = roofline\ngroup FC bf16 3 0.1 0 0 1 0.01 1 10\n' >"$TMP/rev.cal"
expect_one_line 2 "rev.cal:3: group 'FC bf16': .*two positive ranges" "a calibration's range from high to low: refused at file:line" -- \
  kernel --op gemm --gpu h100 --m 64 --n 64 --k 64 --calibration "$TMP/rev.cal"
printf 'gpu = h100\npredictor = nosuch\ngroup FC bf16 3 0.1 0 0\n' >"$TMP/pred.cal"
expect_one_line 2 "pred.cal: predictor 'nosuch' is not loaded" "a calibration of a predictor not loaded: refused" -- \
  --model gpt3-2.7b --calibration "$TMP/pred.cal"
expect_one_line 2 "--calibration: corrects predictions .*not perfmod graph" "--calibration where nothing is predicted: refused" -- \
  graph --model gpt3-2.7b --calibration "$TMP/h100.cal"
expect_one_line 2 "--shapes: how many shapes perfmod calibrate fits on, not perfmod eval" "--shapes outside calibrate: refused" -- \
  eval --data "$TMP/md" --shapes 5
finish
