#!/bin/sh
# calibrate-comm.sh: perfmod calibrate on collectives.  For each of the five NCCL GPUs left out
# of tile-mlp's collective network (as scripts/comm-eval.sh's folds), the network is calibrated
# on N of the GPU's measured collectives (SHAPES; drawn by each of SEEDS from the 80 % eval
# keeps) and judged on its seeded 20 % held out: the median |error| per operation, uncalibrated
# (N = 0) and per N, the mean over the seeds.  FOLDS (default the NVLink GPUs: a100 h100 gb200)
# chooses them; perfmod calibrate leaves a PCIe server's collectives out (l40s and
# rtx-pro-6000 then fail: nothing to fit), as calibrating them made them worse (doc/precision.md).
# Usage: scripts/calibrate-comm.sh [DATA [OUTDIR]]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$top/../shared/moderndata}
out=${2:-${TMPDIR:-/tmp}/perfmod-calibrate-comm}
run=${PERFMOD_RUN:-$top/run}
shapes=${SHAPES:-10 25 50 100}
seeds=${SEEDS:-1 2 3}
folds=${FOLDS:-a100 h100 gb200}
mkdir -p "$out"
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server GB200=gb200

# median |error| per operation of tile-mlp in an eval table on stdin: "operation median"
medians () { awk '$1 == "tile-mlp" { print $3, $8 }'; }

fold () {
  f=$1 test=$2 train=$3
  params=$out/logo-nccl-$f.params
  "$run" train --predictor tile-mlp --data "$data" --table nccl --in-dist "$train" --seed 1 \
    --out "$params" >/dev/null 2>&1
  opt="--plugin-opt tile-mlp:comm_params=$params"
  gpu=${test##*,}    # the section the NCCL rows name (H100: the aiconfigurator folder's)
  # shellcheck disable=SC2086
  "$run" eval --data "$data" --table nccl --gpu "$test" --split holdout --predictor tile-mlp \
    $opt 2>/dev/null | medians > "$out/$f-0.txt"
  for n in $shapes; do
    : > "$out/$f-$n.txt"
    for s in $seeds; do
      # shellcheck disable=SC2086
      "$run" calibrate --data "$data" --table nccl --gpu "$gpu" --shapes "$n" --seed "$s" \
        --out "$out/$f-$n-$s.cal" $opt >/dev/null 2>&1
      # shellcheck disable=SC2086
      "$run" eval --data "$data" --table nccl --gpu "$test" --split holdout --predictor tile-mlp \
        $opt --calibration "$out/$f-$n-$s.cal" 2>/dev/null | medians >> "$out/$f-$n.txt"
    done
  done
  echo "== $f left out of training: median |error| (%) on its held-out 20 %, calibrated on N collectives (mean of seeds $seeds)"
  printf '%-15s %8s' operation "N=0"
  for n in $shapes; do printf ' %8s' "N=$n"; done
  echo
  for op in $(awk '{ print $1 }' "$out/$f-0.txt"); do
    printf '%-15s %8s' "$op" "$(awk -v o="$op" '$1 == o { printf "%.2f", $2 }' "$out/$f-0.txt")"
    for n in $shapes; do
      printf ' %8s' "$(awk -v o="$op" '$1 == o { s += $2; k++ } END { if (k) printf "%.2f", s / k; else printf "-" }' "$out/$f-$n.txt")"
    done
    echo
  done
}
for f in $folds; do
  case $f in
  a100) fold a100 "$A100" "$H100,$L40S,$RTX,$GB200" ;;
  h100) fold h100 "$H100" "$A100,$L40S,$RTX,$GB200" ;;
  l40s) fold l40s "$L40S" "$A100,$H100,$RTX,$GB200" ;;
  rtx-pro-6000) fold rtx-pro-6000 "$RTX" "$A100,$H100,$L40S,$GB200" ;;
  gb200) fold gb200 "$GB200" "$A100,$H100,$L40S,$RTX" ;;
  *) echo "calibrate-comm.sh: FOLDS: no fold '$f'" >&2; exit 2 ;;
  esac
done
