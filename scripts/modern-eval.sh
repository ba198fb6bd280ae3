#!/bin/sh
# modern-eval.sh: the learned predictors on ../shared/moderndata, validated two ways: (a) the
# seeded 20 % of each GPU's shapes held out, (b) leave one GPU out over the four aiconfigurator
# GPUs (vidur's per-layer ops over A100/H100/A40).  Usage: scripts/modern-eval.sh [DATA [OUTDIR]]
# Prints the eval tables; the parameters of each fold are left in OUTDIR.  PREDICTORS (default
# "tile-mlp linreg") chooses which are trained; roofline is always printed beside them.
# The collectives (NCCL, DeepEP) have a script of their own: scripts/comm-eval.sh.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$top/../shared/moderndata}
out=${2:-${TMPDIR:-/tmp}/perfmod-modern-eval}
run=${PERFMOD_RUN:-$top/run}
seed=${SEED:-1}
members=${MEMBERS:-3}
predictors=${PREDICTORS:-tile-mlp linreg}
tables=${TABLES:-gemm,context_attention,generation_attention,vidur_layer}
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=1

# train_and_eval NAME EVAL-ARGS -- TRAIN-ARGS: each predictor trained with TRAIN-ARGS into
# OUTDIR/P-NAME.params, then one eval with EVAL-ARGS over all of them.
train_and_eval () {
  name=$1 evalargs=$2
  shift 3
  list=roofline opts=
  for p in $predictors; do
    extra=
    [ "$p" = tile-mlp ] && extra="--members $members"
    "$run" train --predictor "$p" --data "$data" --seed "$seed" $extra "$@" --out "$out/$p-$name.params"
    list="$list,$p" opts="$opts --plugin-opt $p:tc_params=$out/$p-$name.params"
  done
  # shellcheck disable=SC2086
  "$run" eval --data "$data" $evalargs --predictor "$list" $opts
}

echo "== (a) in-distribution: the seeded 20 % of every GPU's shapes held out"
train_and_eval in-dist "--table $tables --split holdout" -- --table "$tables" --split train

# The folds: the GPU left out (its gpus.d sections) and the ones trained on.
# aiconfigurator's H100 rows join NeuSight's section by their device column and
# the datasheet section by their folder name (doc/design-notes.md): both are H100.
fold () {
  name=$1 test=$2 train=$3 tabs=$4
  echo "== (b) leave one GPU out: $name (trained on $train)"
  train_and_eval "logo-$name" "--table $tabs --gpu $test" -- --table "$tabs" --in-dist "$train"
}
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server
aic=${AIC_TABLES:-gemm,context_attention}
fold a100 "$A100" "$H100,$L40S,$RTX" "$aic"
fold h100 "$H100" "$A100,$L40S,$RTX" "$aic"
fold l40s "$L40S" "$A100,$H100,$RTX" "$aic"
fold rtx-pro-6000 "$RTX" "$A100,$H100,$L40S" "$aic"
fold vidur-a100 "$A100" "$H100,a40" vidur_layer
fold vidur-h100 "$H100" "$A100,a40" vidur_layer
fold vidur-a40 a40 "$A100,$H100" vidur_layer
