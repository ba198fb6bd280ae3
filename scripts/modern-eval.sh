#!/bin/sh
# modern-eval.sh: tile-mlp's tensor-core networks validated two ways on ../shared/moderndata:
# (a) the seeded 20 % of each GPU's shapes held out, (b) leave one GPU out over the four
# aiconfigurator GPUs (vidur's over A100/H100/A40).  Usage: scripts/modern-eval.sh [DATA [OUTDIR]]
# Prints the eval tables; the parameters of each fold are left in OUTDIR.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$top/../shared/moderndata}
out=${2:-${TMPDIR:-/tmp}/perfmod-modern-eval}
run=${PERFMOD_RUN:-$top/run}
seed=${SEED:-1}
members=${MEMBERS:-3}
tables=${TABLES:-gemm,context_attention,generation_attention,nccl,vidur_layer}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1

echo "== (a) in-distribution: the seeded 20 % of every GPU's shapes held out"
"$run" train --predictor tile-mlp --data "$data" --table "$tables" --split train \
  --members "$members" --seed "$seed" --out "$out/in-dist.params"
"$run" eval --data "$data" --table "$tables" --split holdout --predictor tile-mlp \
  --plugin-opt tile-mlp:tc_params="$out/in-dist.params"

# The folds: the GPU left out (its gpus.d sections) and the ones trained on.
# aiconfigurator's H100 rows join NeuSight's section by their device column and
# the datasheet section by their folder name (doc/design-notes.md): both are H100.
fold () {
  name=$1 test=$2 train=$3 tabs=$4
  echo "== (b) leave one GPU out: $name (trained on $train)"
  "$run" train --predictor tile-mlp --data "$data" --table "$tabs" --in-dist "$train" \
    --members "$members" --seed "$seed" --out "$out/logo-$name.params"
  "$run" eval --data "$data" --table "$tabs" --gpu "$test" --predictor tile-mlp \
    --plugin-opt tile-mlp:tc_params="$out/logo-$name.params"
}
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server
aic=${AIC_TABLES:-gemm,context_attention,nccl}
fold a100 "$A100" "$H100,$L40S,$RTX" "$aic"
fold h100 "$H100" "$A100,$L40S,$RTX" "$aic"
fold l40s "$L40S" "$A100,$H100,$RTX" "$aic"
fold rtx-pro-6000 "$RTX" "$A100,$H100,$L40S" "$aic"
fold vidur-a100 "$A100" "$H100,a40" vidur_layer
fold vidur-h100 "$H100" "$A100,a40" vidur_layer
fold vidur-a40 a40 "$A100,$H100" vidur_layer
