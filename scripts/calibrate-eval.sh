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
  gpu=${test%%,*}
  calibration_curve "$f" gemm "$test" "$gpu" medians --plugin-opt tile-mlp:gemm_params="$params"
  echo "== $f left out of training: tile-mlp's median |error| (%) on its held-out 20 %, calibrated on N shapes (mean of seeds $seeds)"
  print_curve "$f" dtype
done
