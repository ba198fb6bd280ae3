#!/bin/sh
# t1180-interval.sh: tile-mlp's 80 % intervals: around the time in log space, narrower on a GPU its GEMM networks were trained on than on one they were not, none where no width was measured; perfmod kernel prints them (table, CSV, JSON) and eval's in80_pct is the share of its own per-op rows measured inside them.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 8

# half_width GPU DTYPE: ln(high / ms) and ln(ms / low) of tile-mlp's 4096^3 GEMM, JSON
half_width () {
  "$PERFMOD" kernel --op gemm --m 4096 --n 4096 --k 4096 --gpu "$1" --dtype "$2" \
    --predictor roofline,tile-mlp --format json 2>/dev/null >"$TMP/k.json"
  jq -r '.predictions[] | select(.predictor == "tile-mlp") |
         "\((.high_ms / .ms) | log) \((.ms / .low_ms) | log)"' "$TMP/k.json"
}
set -- $(half_width h100 bf16)
in_hi=${1:-0} in_lo=${2:-1}
ok $(awk -v a="$in_hi" -v b="$in_lo" 'BEGIN { d = a - b; exit !(a > 0.01 && d < 1e-6 && d > -1e-6) }'
     echo $?) "H100 (trained on): the interval is the time times and over one factor ($in_hi, $in_lo)"
ok $(jq -e '.predictions[] | select(.predictor == "roofline") | .low_ms == null and .high_ms == null' \
       "$TMP/k.json" >/dev/null; echo $?) "the roofline, a bound, gives no interval (null)"
set -- $(half_width b200-sxm bf16)
out_hi=${1:-0}
ok $(awk -v a="$in_hi" -v b="$out_hi" 'BEGIN { exit !(a > 0 && b > 1.5 * a) }'; echo $?) \
  "B200 (not trained on): wider than on H100 ($out_hi against $in_hi)"
# A batch of products has widths of its own, wider than a GEMM's (MLA's products missed by
# more): on H100 a bf16 BMM's interval is wider than the 4096^3 GEMM's above
"$PERFMOD" kernel --op bmm --batch 64 --m 256 --n 128 --k 512 --gpu h100 --dtype bf16 \
  --predictor tile-mlp --format json 2>/dev/null >"$TMP/b.json"
bmm_hi=$(jq -r '.predictions[] | select(.predictor == "tile-mlp") | (.high_ms / .ms) | log' "$TMP/b.json")
ok $(awk -v a="$in_hi" -v b="${bmm_hi:-0}" 'BEGIN { exit !(a > 0 && b > 1.5 * a) }'; echo $?) \
  "a bf16 batch of products on H100: an interval of its own, wider than a GEMM's ($bmm_hi against $in_hi)"
# fp16 GEMMs have no measured width: no interval, an empty CSV cell
run_pm kernel --op gemm --m 1024 --n 1024 --k 1024 --gpu h100 --dtype fp16 --predictor tile-mlp \
  --format csv
ok $([ "$rc" -eq 0 ] && [ "$(head -1 "$TMP/out")" = \
       "predictor,op,dtype,gpu,ms,spread_ms,tflops,gbps,note,low_ms,high_ms" ] &&
     awk -F, 'NR == 2 { exit !($1 == "tile-mlp" && $5 > 0 && $10 == "" && $11 == "") }' "$TMP/out"
     echo $?) "fp16, whose errors were not measured: no interval (empty cells)"
run_pm kernel --op gemm --m 4096 --n 4096 --k 4096 --gpu h100 --dtype bf16 --predictor tile-mlp
ok $([ "$rc" -eq 0 ] && grep -q '80% interval (ms)' "$TMP/out" &&
     grep -Eq '^tile-mlp +[0-9.]+ +[0-9.]+ +[0-9.]+  [0-9.]+-[0-9.]+' "$TMP/out"; echo $?) \
  "the table shows the interval as low-high"

# eval: in80_pct is the share of the per-op rows measured inside [low, high]
G="$TMP/md/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$G"
awk 'BEGIN { print "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency"
  for (i = 1; i <= 40; i++) { m = 64 * i; t = 2 * m * 4096 * 4096 / 6e14 * 1e3 * (0.7 + (i % 7) / 10)
    printf "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,%d,4096,4096,%.6f\n", m, t } }' \
  | gzip >"$G/gemm_perf.csv.gz"
run_pm eval --data "$TMP/md" --predictor tile-mlp --per-op --format csv
cp "$TMP/out" "$TMP/perop.csv"
run_pm eval --data "$TMP/md" --predictor tile-mlp --format csv
ok $([ "$rc" -eq 0 ] && [ "$(head -1 "$TMP/out")" = \
       "predictor,table,class,dtype,gpu,rows,mape_pct,median_pct,bias_pct,in80_pct" ]; echo $?) \
  "eval's CSV has in80_pct"
share=$(awk -F, 'NR > 1 && $22 != "" { n++; if ($17 >= $22 && $17 <= $23) c++ }
                 END { if (n == 40) printf "%.4f", 100 * c / n }' "$TMP/perop.csv")
got=$(awk -F, '$1 == "tile-mlp" { print $10 }' "$TMP/out")
ok $([ -n "$share" ] && awk -v a="$share" -v b="$got" 'BEGIN { d = a - b; exit !(b != "" && d < 1e-3 && d > -1e-3) }'
     echo $?) "in80_pct ($got) is the share of the 40 per-op rows inside their interval ($share)"

finish
