#!/bin/sh
# calibrate-interval.sh: tile-mlp's 80 % intervals after perfmod calibrate.  On the folds and
# calibrations scripts/calibrate-eval.sh left in OUTDIR (each GPU of FOLDS left out of the GEMM
# networks' training, calibrated on N of its shapes by each of SEEDS), the share of its held-out
# 20 % inside the interval perfmod gives (a GPU left out: the wider width, around the calibrated
# prediction) and inside the narrower width of a GPU the networks were trained on
# (plugins/tc-model.h), per dtype, the mean over the seeds; N = 0 uncalibrated.
# Usage: scripts/calibrate-interval.sh [DATA [OUTDIR]]   (after scripts/calibrate-eval.sh)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/calibrate-common.sh"

# the GEMMs' trained-on half widths by dtype, from the header: "dtype width" lines
trained=$(awk '/tc_interval80\[TC_NGROUPS\]/ { on = 1 } on && /^ *\[PERFMOD_DTYPE_/ {
    d = $1; gsub (/.*PERFMOD_DTYPE_|\].*/, "", d); w = $4; sub (/,$/, "", w); print tolower (d), w }
  on && /^};/ { exit }' "$top/plugins/tc-model.h")

# cover: tile-mlp's GEMM rows of a per-op CSV on stdin: "dtype in_interval in_trained_width rows"
cover () {
  awk -F, -v tw="$trained" 'BEGIN { n = split (tw, a, /[ \n]/); for (i = 1; i < n; i += 2) w[a[i]] = a[i + 1] }
    NR > 1 && $1 == "tile-mlp" && $6 == "FC" && $17 > 0 && $18 > 0 && $22 != "" {
      d = $7; k[d]++; if ($17 >= $22 && $17 <= $23) c[d]++
      r = log ($17 / $18); if (r < 0) r = -r; if (d in w && r <= w[d]) t[d]++ }
    END { for (d in k) printf "%s %.4f %.4f %d\n", d, c[d] / k[d], t[d] / k[d], k[d] }'
}

for f in $folds; do
  case $f in
  a100) test=$A100 ;; h100) test=$H100 ;; l40s) test=$L40S ;; rtx-pro-6000) test=$RTX ;;
  gb200) test=$GB200 ;;
  *) echo "calibrate-interval.sh: FOLDS: no fold '$f'" >&2; exit 2 ;;
  esac
  params=$out/tile-mlp-logo-$f.params
  [ -s "$params" ] || { echo "calibrate-interval.sh: $params: run scripts/calibrate-eval.sh first" >&2; exit 2; }
  opt="--plugin-opt tile-mlp:gemm_params=$params"
  # shellcheck disable=SC2086
  "$run" eval --data "$data" --table gemm --gpu "$test" --split holdout --predictor tile-mlp \
    --per-op --format csv $opt 2>/dev/null | cover > "$out/$f-cover-0.txt"
  for n in $shapes; do
    : > "$out/$f-cover-$n.txt"
    for s in $seeds; do
      cal=$out/$f-$n-$s.cal
      [ -s "$cal" ] || { echo "calibrate-interval.sh: $cal: run scripts/calibrate-eval.sh first" >&2; exit 2; }
      # shellcheck disable=SC2086
      "$run" eval --data "$data" --table gemm --gpu "$test" --split holdout --predictor tile-mlp \
        --per-op --format csv $opt --calibration "$cal" 2>/dev/null | cover >> "$out/$f-cover-$n.txt"
    done
  done
  echo "== $f left out: share of its held-out 20 % inside the 80 % interval given / inside the trained-on width (mean of seeds $seeds)"
  printf '%-10s %13s' dtype "N=0"
  for n in $shapes; do printf ' %13s' "N=$n"; done
  echo
  for d in $(awk '{ print $1 }' "$out/$f-cover-0.txt" | sort); do
    printf '%-10s %13s' "$d" "$(awk -v d="$d" '$1 == d { printf "%.1f / %.1f", 100 * $2, 100 * $3 }' "$out/$f-cover-0.txt")"
    for n in $shapes; do
      printf ' %13s' "$(awk -v d="$d" '$1 == d { a += $2; b += $3; k++ } END { if (k) printf "%.1f / %.1f", 100 * a / k, 100 * b / k; else printf "-" }' "$out/$f-cover-$n.txt")"
    done
    echo
  done
done
