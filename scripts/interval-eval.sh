#!/bin/sh
# interval-eval.sh: the width of tile-mlp's 80 % intervals and their coverage, from the networks
# scripts/modern-eval.sh trained (its OUTDIR): on a GPU the networks were trained on (the seeded
# 20 % held out, per GPU) and on one they were not (each GPU left out in turn).  Each width is
# the 80th percentile of |ln (measured / predicted)| over the folds (each fold weighing the same),
# per kernel class and dtype; the coverage of a fold is measured with the width the other folds
# give (cross-fitted), so no fold is judged by a width it set.
# Usage: scripts/interval-eval.sh LOGO-DIR IN-DIST-DIR [DATA]
#   LOGO-DIR holds tile-mlp-logo-<gpu>.params (FOLDS of modern-eval.sh), IN-DIST-DIR
#   tile-mlp-in-dist.params.  TABLE (default gemm) chooses the table.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
logo=$1 indist=$2
data=${3:-$top/../shared/moderndata}
run=${PERFMOD_RUN:-$top/run}
table=${TABLE:-gemm}
tmp=${TMPDIR:-/tmp}/perfmod-interval.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1

# perop PARAMS ARGS: tile-mlp's rows (class, dtype, gpu, |ln(measured/predicted)|) with PARAMS
perop () {
  p=$1
  shift
  "$run" eval --data "$data" --table "$table" --predictor tile-mlp --per-op --format csv \
    --plugin-opt tile-mlp:tc_params="$p" --plugin-opt tile-mlp:gemm_params="$p" "$@" 2>/dev/null |
    awk -F, 'NR > 1 && $1 == "tile-mlp" && $17 > 0 && $18 > 0 {
      r = log($17 / $18); if (r < 0) r = -r; print $6 "," $7 "," $5 "," r }'
}

# widths FILE: per class and dtype, each fold (column 3) its own: the width whose coverage,
# averaged over the folds, is 80 % (all folds), and each fold's coverage under the width the
# other folds give
widths () {
  awk -F, '
    { k = $1 " " $2; f = k SUBSEP $3; if (!(f in n)) { nf[k]++; fold[k, nf[k]] = $3 }
      n[f]++; r[f, n[f]] = $4; keys[k] = 1 }
    # the mean over the folds of k (but skip) of the share within w
    function cover(k, w, skip,   i, j, f, c, m, t) {
      t = 0; m = 0
      for (i = 1; i <= nf[k]; i++) {
        if (fold[k, i] == skip) continue
        f = k SUBSEP fold[k, i]; c = 0
        for (j = 1; j <= n[f]; j++) if (r[f, j] <= w) c++
        t += c / n[f]; m++
      }
      return m ? t / m : -1
    }
    function width(k, skip,   lo, hi, mid, it) {
      lo = 0; hi = 20
      for (it = 0; it < 50; it++) { mid = (lo + hi) / 2; if (cover(k, mid, skip) < 0.8) lo = mid; else hi = mid }
      return hi
    }
    END {
      for (k in keys) {
        w = width(k, "")
        printf "%s (all folds): width %.4f (x%.3f either way) over %d folds; cross-fitted coverage:\n", k, w, exp(w), nf[k]
        for (i = 1; i <= nf[k]; i++) {
          g = fold[k, i]
          if (nf[k] < 2) { printf "%s, %s: no other fold to set its width\n", k, g; continue }
          wo = width(k, g); f = k SUBSEP g; c = 0
          for (j = 1; j <= n[f]; j++) if (r[f, j] <= wo) c++
          printf "%s, %s: %d rows, %.1f %% inside the others'\'' width %.4f\n", k, g, n[f], 100 * c / n[f], wo
        }
      }
    }' "$1" | LC_ALL=C sort
}

echo "== a GPU the networks were trained on (the seeded 20 % held out)"
perop "$indist/tile-mlp-in-dist.params" --split holdout >"$tmp/in"
widths "$tmp/in"

echo "== a GPU left out"
: >"$tmp/out"
for p in "$logo"/tile-mlp-logo-*.params; do
  g=${p##*/tile-mlp-logo-}
  g=${g%.params}
  case $g in vidur-*) continue ;; esac
  case $g in
  a100) gpu=a100-sxm-80gb ;; h100) gpu=NVIDIA_H100_80GB_HBM3,h100-sxm ;; l40s) gpu=l40s ;;
  rtx-pro-6000) gpu=rtx-pro-6000-server ;; gb200) gpu=gb200 ;; *) gpu=$g ;;
  esac
  # the fold is the GPU left out, whichever gpus.d section its rows joined
  perop "$p" --gpu "$gpu" | awk -F, -v g="$g" 'BEGIN { OFS = "," } { $3 = g; print }' >>"$tmp/out"
done
widths "$tmp/out"
