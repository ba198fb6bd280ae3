#!/bin/sh
# t0810-plot.sh: the SVG roofline chart (--plot): well-formed, points on or under the roofs, all the predicted time accounted, refusals.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 15

# attr FILE CLASS-ELEMENT-SELECTOR ATTR: the attribute of the element whose line matches
attr () { grep -- "$2" "$1" | head -1 | sed -n "s/.* $3=\"\([^\"]*\)\".*/\1/p"; }

# fp32: NeuSight's roofline, which counts matrix bytes in GiB, puts no class above the
# physical roofs there
W="--model gpt3-2.7b --gpu h100 --mode train --precision fp32 --batch 1 --seq 2048 --predictor roofline"
run_pm $W --plot "$TMP/r.svg" --format csv
ok $([ "$rc" -eq 0 ] && [ -s "$TMP/r.svg" ] && echo 0 || echo 1) "--plot writes the chart and exits 0"
cp "$TMP/out" "$TMP/csv"
ok $(awk 'NR==1&&/^<\?xml /{x=1} /<svg /{s++} /<\/svg>/{e++} {o+=gsub(/<g[ >]/,"&"); c+=gsub(/<\/g>/,"&")}
     END{print (x&&s==1&&e==1&&o==c&&o>0)?0:1}' "$TMP/r.svg") \
  "the chart is one svg element with balanced groups"
ok $(for c in FC BMM EW Softmax LN; do grep -q "class=\"class\" data-class=\"$c\"" "$TMP/r.svg" || echo x; done |
     grep -q x && echo 1 || echo 0) "every kernel class with FLOPs has its circle"
ok $(grep -c 'class="kernel"' "$TMP/r.svg" | awk '{print ($1>10)?0:1}') "distinct kernels are drawn as dots"

# Under roofline, every FC kernel of GPT-3 2.7B is compute-bound: the class sits on the
# fp32 roof; element-wise kernels move bytes at the bandwidth: the class sits on the
# memory roof.
peak=$(attr "$TMP/r.svg" 'data-roof="fp32"' data-flops-per-s)
bw=$(attr "$TMP/r.svg" 'data-roof="memory"' data-bytes-per-s)
fc=$(attr "$TMP/r.svg" 'data-class="FC" data-kernels' data-flops-per-s)
ew=$(attr "$TMP/r.svg" 'data-class="EW" data-kernels' data-flops-per-s)
ewi=$(attr "$TMP/r.svg" 'data-class="EW" data-kernels' data-intensity)
ok $(awk -v p="$peak" -v f="$fc" 'BEGIN{d=f/p-1; print (p>6e13&&d<1e-5&&d>-1e-5)?0:1}') \
  "roofline: the FC class lies on the fp32 roof"
ok $(awk -v b="$bw" -v f="$ew" -v i="$ewi" 'BEGIN{d=f/(b*i)-1; print (b>3e12&&d<1e-6&&d>-1e-6)?0:1}') \
  "roofline: the element-wise class lies on the memory roof"
ok $(grep 'class="class"' "$TMP/r.svg" | sed 's/.*data-intensity="\([^"]*\)" data-flops-per-s="\([^"]*\)".*/\1 \2/' |
     awk -v p="$peak" -v b="$bw" '{r=b*$1; if (r>p) r=p; if ($2>r*(1+1e-6)) bad++; n++} END{print (n==5&&!bad)?0:1}') \
  "roofline: no class above the roofs"
# the legend's classes (placed or not) add up to the predicted step
ok $(grep 'class="legend"' "$TMP/r.svg" | sed 's/.*data-ms="\([^"]*\)".*/\1/' |
     awk -v e="$(awk -F, 'NR==2{print $2}' "$TMP/csv")" '{t+=$1} END{d=t/e-1; print (e>0&&d<1e-6&&d>-1e-6)?0:1}') \
  "the legend accounts for the whole predicted time"
run_pm $W --plot "$TMP/r2.svg" --format csv
ok $(cmp -s "$TMP/r.svg" "$TMP/r2.svg" && echo 0 || echo 1) "the chart is deterministic"
run_pm --model gpt3-2.7b --gpu h100 --mode inf --batch 1 --seq 512 --dtype bf16 --predictor tile-mlp,roofline \
  --plot "$TMP/t.svg"
ok $([ "$rc" -eq 0 ] && grep -q 'predictor tile-mlp, bf16' "$TMP/t.svg" &&
     grep -q 'data-roof="fp16/bf16"[^>]*stroke="#222"' "$TMP/t.svg" && echo 0 || echo 1) \
  "the first predictor is charted, and the run's dtype roof is the solid one"

# --- refusals: nothing half-written ---
expect_fail 1 "$TMP/no/such/dir/r.svg: cannot write" "an unwritable chart path is named, exit 1, no output" -- \
  $W --plot "$TMP/no/such/dir/r.svg"
expect_fail 2 "--predictor 'nope'" "a failed prediction leaves no chart" -- \
  --model gpt3-2.7b --predictor nope --plot "$TMP/f.svg"
ok $([ ! -e "$TMP/f.svg" ] && [ -z "$(ls "$TMP" | grep '\.tmp')" ] && echo 0 || echo 1) "no chart and no temporary file left"
expect_fail 2 "--plot: a prediction draws" "perfmod graph --plot is refused" -- graph --model gpt3-2.7b --plot "$TMP/g.svg"
run_pm --model gpt3-2.7b --mode train --strategy tp=2 --plot "$TMP/s.svg"
ok $([ "$rc" -eq 0 ] && grep -q '<title>timeline: ' "$TMP/s.svg" && ! grep -q 'class="roof"' "$TMP/s.svg" &&
     echo 0 || echo 1) "--plot with --strategy draws the step's timeline (t0815), not the roofline"
finish
