# calibrate-common.sh: the settings scripts/calibrate-eval.sh and scripts/calibrate-interval.sh
# share (sourced, with top set): the second reads what the first left in OUTDIR, so their
# data, folder, folds, shape counts and seeds must agree.  Arguments: [DATA [OUTDIR]].
data=${1:-$top/../shared/moderndata}
out=${2:-${TMPDIR:-/tmp}/perfmod-calibrate-eval}
run=${PERFMOD_RUN:-$top/run}
folds=${FOLDS:-l40s gb200}
shapes=${SHAPES:-50 200 1000}
seeds=${SEEDS:-1 2 3}
export OPENBLAS_NUM_THREADS=1
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server GB200=gb200
