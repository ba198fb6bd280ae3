#!/bin/sh
# modern-eval.sh: the learned predictors on ../shared/moderndata, validated two ways: (a) the
# seeded 20 % of each GPU's shapes held out, (b) leave one GPU out over the five aiconfigurator
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
    # tile-mlp reads its GEMM networks from a file of their own: this one's
    [ "$p" = tile-mlp ] && opts="$opts --plugin-opt $p:gemm_params=$out/$p-$name.params"
  done
  # shellcheck disable=SC2086
  "$run" eval --data "$data" $evalargs --predictor "$list" $opts
}

# IN_DIST=0 leaves (a) out (to run it and the folds side by side)
if [ "${IN_DIST:-1}" != 0 ]; then
  echo "== (a) in-distribution: the seeded 20 % of every GPU's shapes held out"
  train_and_eval in-dist "--table $tables --split holdout" -- --table "$tables" --split train
fi

# The folds: the GPU left out (its gpus.d sections) and the ones trained on.
# aiconfigurator's H100 rows join NeuSight's section by their device column and
# the datasheet section by their folder name (doc/design-notes.md): both are H100.
fold () {
  name=$1 test=$2 train=$3 tabs=$4
  echo "== (b) leave one GPU out: $name (trained on $train)"
  train_and_eval "logo-$name" "--table $tabs --gpu $test" -- --table "$tabs" --in-dist "$train"
}
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server GB200=gb200
NV="$A100,$H100,$L40S,$RTX,$GB200"
aic=${AIC_TABLES:-gemm,context_attention}
# the AMD folds: aiter's MI300X and MI308X GEMMs, LLMCompass's MI210, beside every other table's
amd=${AMD_TABLES:-gemm,aiter_gemm,llmcompass_gemm,mla_bmm}
# FOLDS chooses the folds (default the five aiconfigurator GPUs; mi300x, mi308x and mi210 are
# the AMD ones; "none" for the vidur ones alone);
# VIDUR=0 leaves vidur's out
folds=${FOLDS:-a100 h100 l40s rtx-pro-6000 gb200}
for f in $folds; do
  case $f in
  a100) fold a100 "$A100" "$H100,$L40S,$RTX,$GB200" "$aic" ;;
  h100) fold h100 "$H100" "$A100,$L40S,$RTX,$GB200" "$aic" ;;
  l40s) fold l40s "$L40S" "$A100,$H100,$RTX,$GB200" "$aic" ;;
  rtx-pro-6000) fold rtx-pro-6000 "$RTX" "$A100,$H100,$L40S,$GB200" "$aic" ;;
  gb200) fold gb200 "$GB200" "$A100,$H100,$L40S,$RTX" "$aic" ;;
  mi300x) fold mi300x mi300x "$NV,mi308x,mi210" "$amd" ;;
  mi308x) fold mi308x mi308x "$NV,mi300x,mi210" "$amd" ;;
  mi210) fold mi210 mi210 "$NV,mi300x,mi308x" "$amd" ;;
  none) ;;
  *) echo "modern-eval.sh: FOLDS: no fold '$f'" >&2; exit 2 ;;
  esac
done
[ "${VIDUR:-1}" = 0 ] && exit 0
fold vidur-a100 "$A100" "$H100,a40" vidur_layer
fold vidur-h100 "$H100" "$A100,a40" vidur_layer
fold vidur-a40 a40 "$A100,$H100" vidur_layer
