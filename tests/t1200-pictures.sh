#!/bin/sh
# t1200-pictures.sh: every chart's text reads: no label outside the canvas, none over another, none across a chart's curve (tests/svg-text-boxes.py, DejaVu Sans' widths), for the roofline, the step's timeline, the scaling chart and the serving frontier.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 not found (the charts are parsed with xml.etree)"
plan 8

# reads NAME: perfmod wrote $TMP/NAME.svg and its text boxes pass
reads () {
  python3 "$top_srcdir/tests/svg-text-boxes.py" "$TMP/$1.svg" >"$TMP/$1.boxes" 2>&1
  r=$?
  [ "$r" -eq 0 ] || diag "$(head -5 "$TMP/$1.boxes")"
  return $r
}
pm () { name=$1; shift; run_pm "$@" --plot "$TMP/$name.svg"; }

pm roof --model gpt3-2.7b --gpu h100 --mode train --precision fp32 --batch 1 --seq 2048 --predictor roofline
ok $([ "$rc" -eq 0 ] && reads roof; echo $?) "the roofline chart: $(tail -1 "$TMP/roof.boxes")"
pm tl --model gpt3-2.7b --gpu h100 --mode train --batch 16 --strategy tp=2,pp=4,dp=1,vp=2,schedule=interleaved --predictor roofline
ok $([ "$rc" -eq 0 ] && reads tl; echo $?) "the timeline, interleaved: $(tail -1 "$TMP/tl.boxes")"
pm many --model llama3.1-70b --gpu h100 --mode train --batch 1024 --seq 4096 --strategy tp=8,pp=8,dp=16,vp=5,schedule=interleaved --nodes 128
ok $([ "$rc" -eq 0 ] && reads many; echo $?) "the timeline of 64 micro-batches on 8 stages: $(tail -1 "$TMP/many.boxes")"
pm scal search --model mixtral-8x7b --gpu h100 --gpus 1024 --global-batch 1024 --seq 4096 --top 3
ok $([ "$rc" -eq 0 ] && reads scal; echo $?) "the scaling chart, its strategies listed beside it: $(tail -1 "$TMP/scal.boxes")"
# the chart is 1000 px wide, or as wide as the list's longest strategy needs (the list
# starts 740 px in, 6.2 px a character): computed here from the listed strategies
w=$(sed -n 's/.*<svg [^>]*width="\([0-9]*\)".*/\1/p' "$TMP/scal.svg" | head -1)
need=$(sed -n 's/.*<text x="724"[^>]*>\([^<]*\)<.*/\1/p' "$TMP/scal.svg" |
       awk '{ n = length ($0); if (n > m) m = n } END { w = int (740 + 6.2 * m); print (w > 1000 ? w : 1000) }')
ok $([ "${w:-0}" -eq "${need:-1}" ] && [ "${w:-0}" -gt 1000 ]; echo $?) \
  "the scaling chart widens to its longest strategy (${w:-?} px, ${need:-?} needed)"
pm fr search --serve --model llama3.1-70b --dtype fp8 --gpu h100 --gpus 8 --isl 1024 --osl 512 --jobs 1
ok $([ "$rc" -eq 0 ] && reads fr; echo $?) "the serving frontier: its labels off each other and off the curve: $(tail -1 "$TMP/fr.boxes")"
ok $([ "$(grep -c 'class="label"' "$TMP/fr.svg")" -ge 10 ]; echo $?) "... and most frontier points still labelled ($(grep -c 'class="label"' "$TMP/fr.svg"))"

# the checker fails perfmod's scaling chart with labels added that collide, leave the
# canvas and cross its curve
pt=$(sed -n 's/.*<polyline [^>]*points="\([0-9.]*\),\([0-9.]*\) .*/\1 \2/p' "$TMP/scal.svg" | head -1)
set -- $pt
sed "s#</svg>#<text x=\"100\" y=\"24\">over the title</text><text x=\"$(( ${w:-1000} - 20 ))\" y=\"300\">past the right edge</text><text x=\"${1:-0}\" y=\"${2:-0}\">on the curve</text></svg>#" \
  "$TMP/scal.svg" >"$TMP/bad.svg"
python3 "$top_srcdir/tests/svg-text-boxes.py" "$TMP/bad.svg" >"$TMP/bad.boxes" 2>&1
ok $([ $? -eq 1 ] && grep -q '^overlap.*over the title' "$TMP/bad.boxes" && grep -q '^outside.*past the right edge' "$TMP/bad.boxes" &&
     grep -q '^crosses the curve on the curve' "$TMP/bad.boxes"; echo $?) \
  "the checker finds a label over another, one outside and one across the curve in a spoiled chart"
finish
