#!/bin/sh
# fit-engine-allreduce.sh: the serving engines' own all-reduce (TensorRT-LLM's, vLLM's and
# SGLang's one-shot/two-shot "custom all-reduce" kernels over NVLink or PCIe) fitted on
# aiconfigurator's kernel measurements, for gpus.d's engine_ar<N>_* keys (doc/serving.md).
# Usage: scripts/fit-engine-allreduce.sh [DATA [SYSTEM...]]
#   DATA    the moderndata folder (default ../shared/moderndata beside the source tree)
#   SYSTEM  aiconfigurator systems (default: every one with a custom_allreduce_perf table)
# Reads DATA/aiconfigurator/SYSTEM/comm/*/*/custom_allreduce_perf.csv.gz with zcat and awk:
# the bfloat16 all_reduce rows of the engines' kernels as a CUDA graph runs them (TensorRT-LLM's
# rows, and vLLM's and SGLang's "*_graph" backends; their "*_eager" rows, the same kernels
# launched one by one from Python, are left out), an identical row in two files once.  Per GPU
# count (2, 4, 8) and message size, the median over frameworks and versions; then two lines
#   t = oneshot_us + bytes / oneshot_gbps     below twoshot_bytes
#   t = twoshot_us + bytes / twoshot_gbps     from it
# (bytes = message_size x 2, bf16), each by least squares on the relative error (weights
# 1 / t^2) over its sizes, the switch at the size (3 sizes or more each side) that gives the
# least sum of squared relative errors.  Prints the gpus.d lines and, with the printed
# (rounded) numbers, the median and largest |error| over the sizes.  A count whose fit has a
# number <= 0 is printed commented out ("not physical"): it is not for gpus.d.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$top/../shared/moderndata}
[ $# -gt 0 ] && shift
systems=$*
if [ -z "$systems" ]; then
  for d in "$data"/aiconfigurator/*/comm; do
    ls "$d"/*/*/custom_allreduce_perf.csv.gz >/dev/null 2>&1 || continue
    systems="$systems $(basename "$(dirname "$d")")"
  done
fi
for sys in $systems; do
  files=$(ls "$data"/aiconfigurator/"$sys"/comm/*/*/custom_allreduce_perf.csv.gz 2>/dev/null) || {
    echo "fit-engine-allreduce.sh: no custom_allreduce_perf table for $sys" >&2
    exit 1
  }
  # shellcheck disable=SC2086
  zcat $files |
    awk -F, '$4 == "all_reduce" && $6 == "bfloat16" && $10 !~ /eager/ && !seen[$0]++ {
               printf "%d %d %.6f\n", $7, $8, $9 * 1000 }' |
    sort -k1,1n -k2,2n -k3,3g |
    awk -v sys="$sys" '
      function flush(   m) {
        if (nv == 0) return
        m = nv % 2 ? v[(nv + 1) / 2] : (v[nv / 2] + v[nv / 2 + 1]) / 2
        np[g]++; X[g, np[g]] = 2 * s; Y[g, np[g]] = m; rows[g] += nv
        nv = 0
      }
      # weighted least squares of y = a + b x over points lo..hi of count c, weights 1/y^2
      function fit(c, lo, hi,   i, w, s0, s1, s2, r0, r1, det) {
        s0 = s1 = s2 = r0 = r1 = 0
        for (i = lo; i <= hi; i++) {
          w = 1 / (Y[c, i] * Y[c, i])
          s0 += w; s1 += w * X[c, i]; s2 += w * X[c, i] * X[c, i]
          r0 += w * Y[c, i]; r1 += w * X[c, i] * Y[c, i]
        }
        det = s0 * s2 - s1 * s1
        A = (r0 * s2 - s1 * r1) / det; B = (s0 * r1 - s1 * r0) / det
      }
      function sse(c, lo, hi, a, b,   i, e, t) {
        t = 0
        for (i = lo; i <= hi; i++) { e = (a + b * X[c, i] - Y[c, i]) / Y[c, i]; t += e * e }
        return t
      }
      function absv(x) { return x < 0 ? -x : x }
      {
        if ($1 != g || $2 != s) { flush(); g = $1; s = $2 }
        v[++nv] = $3
      }
      END {
        flush()
        printf "; %s: custom_allreduce_perf (bf16, CUDA-graph and TensorRT-LLM rows, medians per size)\n", sys
        for (c = 2; c <= 8; c *= 2) {
          n = np[c]
          if (n < 6) { printf "; %d GPUs: %d sizes, too few to fit\n", c, n; continue }
          best = -1
          for (k = 4; k <= n - 2; k++) {     # the two-shot line from point k
            fit(c, 1, k - 1); a1 = A; b1 = B
            fit(c, k, n); a2 = A; b2 = B
            e = sse(c, 1, k - 1, a1, b1) + sse(c, k, n, a2, b2)
            if (best < 0 || e < best) { best = e; bk = k; ba1 = a1; bb1 = b1; ba2 = a2; bb2 = b2 }
          }
          # the numbers as printed, and the errors with them
          o_us = sprintf("%.2f", ba1); o_gb = bb1 > 0 ? sprintf("%.1f", 1e-3 / bb1) : "0"
          t_us = sprintf("%.2f", ba2); t_gb = bb2 > 0 ? sprintf("%.1f", 1e-3 / bb2) : "0"
          sw = X[c, bk]
          physical = o_us > 0 && o_gb > 0 && t_us > 0 && t_gb > 0
          m = 0
          for (i = 1; i <= n; i++) {
            t = X[c, i] < sw ? o_us + X[c, i] / (o_gb * 1e3) : t_us + X[c, i] / (t_gb * 1e3)
            err[++m] = absv(t - Y[c, i]) / Y[c, i] * 100
          }
          # median and largest |error|
          for (i = 2; i <= m; i++) { x = err[i]; for (j = i - 1; j >= 1 && err[j] > x; j--) err[j + 1] = err[j]; err[j + 1] = x }
          med = m % 2 ? err[(m + 1) / 2] : (err[m / 2] + err[m / 2 + 1]) / 2
          pre = physical ? "" : "; "
          printf "; %d GPUs: %d rows, %d sizes (%d to %d B): median |error| %.1f %%, largest %.1f %%%s\n",
                 c, rows[c], n, X[c, 1], X[c, n], med, err[m], physical ? "" : " (not physical: not for gpus.d)"
          printf "%sengine_ar%d_oneshot_us = %s\n", pre, c, o_us
          printf "%sengine_ar%d_oneshot_gbps = %s\n", pre, c, o_gb
          printf "%sengine_ar%d_twoshot_bytes = %d\n", pre, c, sw
          printf "%sengine_ar%d_twoshot_us = %s\n", pre, c, t_us
          printf "%sengine_ar%d_twoshot_gbps = %s\n", pre, c, t_gb
        }
      }'
done
