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
: "${SHAPES:=10 25 50 100}" "${FOLDS:=a100 h100 gb200}"
export SHAPES FOLDS
. "$top/scripts/calibrate-common.sh"
mkdir -p "$out"

# median |error| per operation of tile-mlp in an eval table on stdin: "operation median"
medians () { awk '$1 == "tile-mlp" { print $3, $8 }'; }

fold () {
  f=$1 test=$2 train=$3
  params=$out/logo-nccl-$f.params
  "$run" train --predictor tile-mlp --data "$data" --table nccl --in-dist "$train" --seed 1 \
    --out "$params" >/dev/null 2>&1
  # the section the NCCL rows name (H100: the aiconfigurator folder's)
  calibration_curve "comm-$f" nccl "$test" "${test##*,}" medians \
    --plugin-opt tile-mlp:comm_params="$params"
  echo "== $f left out of training: median |error| (%) on its held-out 20 %, calibrated on N collectives (mean of seeds $seeds)"
  print_curve "comm-$f" operation
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
