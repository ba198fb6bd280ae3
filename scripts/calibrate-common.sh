# calibrate-common.sh: the settings scripts/calibrate-eval.sh and scripts/calibrate-interval.sh
# share (sourced, with top set): the second reads what the first left in OUTDIR, so their
# data, folder, folds, shape counts and seeds must agree; and the calibration curve
# calibrate-eval.sh and calibrate-comm.sh both measure.  Arguments: [DATA [OUTDIR]].
data=${1:-$top/../shared/moderndata}
out=${2:-${TMPDIR:-/tmp}/perfmod-calibrate-eval}
run=${PERFMOD_RUN:-$top/run}
folds=${FOLDS:-l40s gb200}
shapes=${SHAPES:-50 200 1000}
seeds=${SEEDS:-1 2 3}
export OPENBLAS_NUM_THREADS=1
A100=a100-sxm-80gb H100=NVIDIA_H100_80GB_HBM3,h100-sxm L40S=l40s RTX=rtx-pro-6000-server GB200=gb200

# calibration_curve NAME TABLE TEST GPU MEDIANS [OPTION...]: tile-mlp (with OPTIONs) on TEST's
# held-out 20 % of TABLE, "key median" lines by the MEDIANS filter: uncalibrated into
# OUTDIR/NAME-0.txt, then calibrated on each N of SHAPES of GPU's rows drawn by each of
# SEEDS (OUTDIR/NAME-N-SEED.cal) into OUTDIR/NAME-N.txt
calibration_curve () {
  name=$1 table=$2 test=$3 gpu=$4 medians=$5
  shift 5
  "$run" eval --data "$data" --table "$table" --gpu "$test" --split holdout --predictor tile-mlp \
    "$@" 2>/dev/null | $medians > "$out/$name-0.txt"
  for n in $shapes; do
    : > "$out/$name-$n.txt"
    for s in $seeds; do
      "$run" calibrate --data "$data" --table "$table" --gpu "$gpu" --shapes "$n" --seed "$s" \
        --out "$out/$name-$n-$s.cal" "$@" >/dev/null 2>&1
      "$run" eval --data "$data" --table "$table" --gpu "$test" --split holdout --predictor tile-mlp \
        "$@" --calibration "$out/$name-$n-$s.cal" 2>/dev/null | $medians >> "$out/$name-$n.txt"
    done
  done
}

# print_curve NAME KEY: calibration_curve's table, a row per key: N = 0, then each N's mean
# over the seeds
print_curve () {
  printf '%-15s %8s' "$2" "N=0"
  for n in $shapes; do printf ' %8s' "N=$n"; done
  echo
  for k in $(awk '{ print $1 }' "$out/$1-0.txt"); do
    printf '%-15s %8s' "$k" "$(awk -v k="$k" '$1 == k { printf "%.2f", $2 }' "$out/$1-0.txt")"
    for n in $shapes; do
      printf ' %8s' "$(awk -v k="$k" '$1 == k { s += $2; c++ } END { if (c) printf "%.2f", s / c; else printf "-" }' "$out/$1-$n.txt")"
    done
    echo
  done
}
