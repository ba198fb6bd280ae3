#!/bin/sh
# comm-eval.sh: tile-mlp's collectives (NCCL's cost model, DeepEP's, and the networks that correct
# them) on aiconfigurator's NCCL and DeepEP tables, validated two ways: (a) the seeded 20 % of every
# GPU's shapes held out (the shipped params/tile-mlp-comm.params), (b) leave one GPU out: one of
# the five NCCL GPUs, one of DeepEP's two.
# Usage: scripts/comm-eval.sh [DATA [OUTDIR]]; prints the eval tables, each fold's parameters
# left in OUTDIR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$top/../shared/moderndata}
out=${2:-${TMPDIR:-/tmp}/perfmod-comm-eval}
run=${PERFMOD_RUN:-$top/run}
seed=${SEED:-1}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1

# (a) is the shipped network (make weights-comm trains it on --split train alone)
echo "== (a) in-distribution: the seeded 20 % of every GPU's shapes held out"
"$run" eval --data "$data" --table nccl,deepep --split holdout --predictor roofline,linreg,tile-mlp

# fold TABLE NAME TEST TRAIN: trained on the TRAIN GPUs' rows of TABLE, evaluated on every
# shape of TEST
fold () {
  echo "== (b) $1, leave one GPU out: $2 (trained on $4)"
  "$run" train --predictor tile-mlp --data "$data" --table "$1" --in-dist "$4" --seed "$seed" \
    --out "$out/logo-$1-$2.params"
  "$run" eval --data "$data" --table "$1" --gpu "$3" --predictor roofline,tile-mlp \
    --plugin-opt tile-mlp:comm_params="$out/logo-$1-$2.params"
}
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server GB200=gb200
fold nccl a100 "$A100" "$H100,$L40S,$RTX,$GB200"
fold nccl h100 "$H100" "$A100,$L40S,$RTX,$GB200"
fold nccl l40s "$L40S" "$A100,$H100,$RTX,$GB200"
fold nccl rtx-pro-6000 "$RTX" "$A100,$H100,$L40S,$GB200"
fold nccl gb200 "$GB200" "$A100,$H100,$L40S,$RTX"
# DeepEP's H100 rows name the device "NVIDIA H100 80GB HBM3" or "NVIDIA H100": NeuSight's section
fold deepep h100 "$H100" "$GB200"
fold deepep gb200 "$GB200" "$H100"
