#!/bin/sh
# t0710-linreg-fidelity.sh: perfmod train fits NeuSight's micro (Li et al.) coefficients from NeuSight's kernels.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
neusight_or_skip
plan 3

run_pm train --predictor linreg --data "$NEUSIGHT/dataset/train" --out "$TMP/linreg.params" --verbose
ok $([ "$rc" -eq 0 ] && grep -q '^perfmod-params' "$TMP/linreg.params"; echo $?) "train linreg on NeuSight's five training GPUs"
# Every fitted (coef, intercept) against micro/<class>.csv, NeuSight's own fit.
for f in bmm linear elem ln softmax; do
  k=$f; [ $f = elem ] && k=elementwise; [ $f = ln ] && k=layernorm
  awk -F, -v k=$k 'NR > 1 && $3 != "0.0" && $3 != "" { print k, $1, $2, $3 }' "$NEUSIGHT/micro/$f.csv"
done >"$TMP/want"
awk 'NR == FNR { want[$1 " " $2] = $3 " " $4; next }
     $3 == "linreg" && $7 == "rows," { key = $4 " " substr($5, 1, length($5) - 1)
       if (!(key in want)) next
       split(want[key], w, " "); n++
       dc = ($9 - w[1]) / w[1]; di = ($11 - w[2]) / w[2]
       if (dc < 0) dc = -dc; if (di < 0) di = -di
       if (dc > 1e-9 || di > 1e-6) { print "off:", key, $9, $11, "want", w[1], w[2]; bad = 1 } }
     END { if (n != 25) { print "compared", n, "fits, want 25"; bad = 1 } exit bad }' "$TMP/want" "$TMP/err" >"$TMP/off"
ok $? "25 per-GPU fits (5 GPUs x 5 classes) equal micro/*.csv (slope within 1e-9, intercept within 1e-6)"
[ -s "$TMP/off" ] && diag "$(cat "$TMP/off")"
# The new GPUs: coef = 1 / (a * bandwidth + b) against micro's rows for them.
awk -F, 'FNR == 1 { f++ } FNR > 1 && $3 == "0.0" { print f, $1, $2, $4 }' \
  "$NEUSIGHT/micro/bmm.csv" "$NEUSIGHT/micro/linear.csv" "$NEUSIGHT/micro/elem.csv" \
  "$NEUSIGHT/micro/ln.csv" "$NEUSIGHT/micro/softmax.csv" >"$TMP/new"
awk 'BEGIN { k[1] = "bmm"; k[2] = "linear"; k[3] = "elementwise"; k[4] = "layernorm"; k[5] = "softmax" }
     NR == FNR { c[NR] = k[$1]; coef[NR] = $3; bw[NR] = $4; m = NR; next }
     $3 == "linreg" && $5 == "extrapolate:" { a[$4] = $8; b[$4] = $12 }
     END { for (i = 1; i <= m; i++) { got = 1 / (a[c[i]] * bw[i] + b[c[i]]); d = (got - coef[i]) / coef[i]
             if (d < 0) d = -d; if (d > 1e-9) { print "off:", c[i], bw[i], got, coef[i]; bad = 1 } }
           exit bad || m != 15 }' "$TMP/new" "$TMP/err" >"$TMP/off"
ok $? "A100-80GB, H100 and L4 coefficients extrapolated from bandwidth equal micro/*.csv (15 values)"
[ -s "$TMP/off" ] && diag "$(cat "$TMP/off")"
finish
