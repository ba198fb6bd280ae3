#!/bin/sh
# calibrate-eval.sh: how many shapes perfmod calibrate takes.  For each GPU left out (FOLDS),
# tile-mlp's GEMM networks trained without it (as scripts/modern-eval.sh's fold, --table
# gemm), then calibrated on N of its shapes (SHAPES; drawn by each of SEEDS from the 80 %
# eval keeps) and judged on its seeded 20 % held out: the median |error| per dtype,
# uncalibrated (N = 0) and per N, the mean over the seeds.
# Usage: scripts/calibrate-eval.sh [DATA [OUTDIR]]   (the fold's parameters are kept in OUTDIR
# and reused when there)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/calibrate-common.sh"
mkdir -p "$out"

# median |error| per dtype of tile-mlp in an eval table on stdin: "dtype median"
medians () { awk '$1 == "tile-mlp" && $3 == "FC" { print $4, $8 }'; }

for f in $folds; do
  case $f in
  a100) test=$A100 train="$H100,$L40S,$RTX,$GB200" ;;
  h100) test=$H100 train="$A100,$L40S,$RTX,$GB200" ;;
  l40s) test=$L40S train="$A100,$H100,$RTX,$GB200" ;;
  rtx-pro-6000) test=$RTX train="$A100,$H100,$L40S,$GB200" ;;
  gb200) test=$GB200 train="$A100,$H100,$L40S,$RTX" ;;
  *) echo "calibrate-eval.sh: FOLDS: no fold '$f'" >&2; exit 2 ;;
  esac
  params=$out/tile-mlp-logo-$f.params
  [ -s "$params" ] || "$run" train --predictor tile-mlp --data "$data" --seed 1 --members 3 \
    --table gemm --in-dist "$train" --out "$params"
  opt="--plugin-opt tile-mlp:gemm_params=$params"
  gpu=${test%%,*}
  # shellcheck disable=SC2086
  "$run" eval --data "$data" --table gemm --gpu "$test" --split holdout --predictor tile-mlp \
    $opt 2>/dev/null | medians > "$out/$f-0.txt"
  for n in $shapes; do
    : > "$out/$f-$n.txt"
    for s in $seeds; do
      # shellcheck disable=SC2086
      "$run" calibrate --data "$data" --table gemm --gpu "$gpu" --shapes "$n" --seed "$s" \
        --out "$out/$f-$n-$s.cal" $opt >/dev/null 2>&1
      # shellcheck disable=SC2086
      "$run" eval --data "$data" --table gemm --gpu "$test" --split holdout --predictor tile-mlp \
        $opt --calibration "$out/$f-$n-$s.cal" 2>/dev/null | medians >> "$out/$f-$n.txt"
    done
  done
  echo "== $f left out of training: tile-mlp's median |error| (%) on its held-out 20 %, calibrated on N shapes (mean of seeds $seeds)"
  printf '%-10s %8s' dtype "N=0"
  for n in $shapes; do printf ' %8s' "N=$n"; done
  echo
  for d in $(awk '{ print $1 }' "$out/$f-0.txt"); do
    printf '%-10s %8s' "$d" "$(awk -v d="$d" '$1 == d { printf "%.2f", $2 }' "$out/$f-0.txt")"
    for n in $shapes; do
      printf ' %8s' "$(awk -v d="$d" '$1 == d { s += $2; k++ } END { if (k) printf "%.2f", s / k; else printf "-" }' "$out/$f-$n.txt")"
    done
    echo
  done
done
