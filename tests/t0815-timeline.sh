#!/bin/sh
# t0815-timeline.sh: the step's timeline (--plot with --strategy), the search's scaling chart (search --plot) and one stage's per-op table (--per-op with --strategy): the SVG parsed, its numbers against the prediction's, refusals.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 not found (the charts are parsed with xml.etree)"
command -v jq >/dev/null || skip_all "jq not found"
plan 40

# tl FILE KEY...: facts of a timeline chart, one per line, from its rectangles'
# data-* attributes (times in ms); exits 1 if the file is no well-formed SVG.
cat > "$TMP/tl.py" <<'EOF'
import sys, xml.etree.ElementTree as ET
from collections import defaultdict
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
if root.tag != ns + 'svg':
    sys.exit(1)
ev = [e for e in root.iter(ns + 'rect') if e.get('class') == 'ev']
rows = [t for t in root.iter(ns + 'text') if t.get('class') == 'row']
span = lambda e: float(e.get('data-end')) - float(e.get('data-start'))
stages = sorted({int(e.get('data-stage')) for e in ev})
pipe = float(root.get('data-pipeline-ms'))
out = {}
out['stages'] = len(stages)
out['rows'] = len(rows)
out['end'] = max(float(e.get('data-end')) for e in ev)
# each stage's rectangles tile [0, end] without gap or overlap
tiled = 1
for s in stages:
    segs = sorted((float(e.get('data-start')), float(e.get('data-end')))
                  for e in ev if int(e.get('data-stage')) == s)
    at = 0.0
    for a, b in segs:
        if abs(a - at) > 1e-6 * out['end']:
            tiled = 0
        at = b
    if abs(at - out['end']) > 1e-6 * out['end']:
        tiled = 0
out['tiled'] = tiled
kinds = defaultdict(float)
count = defaultdict(int)
for e in ev:
    if e.get('data-kind') == 'group':     # narrow operations drawn as one: their totals
        for k in ('fw', 'bw', 'recompute', 'comm', 'p2p', 'idle', 'grads', 'optimizer'):
            kinds[k] += float(e.get('data-' + k + '-ms'))
    else:
        kinds[e.get('data-kind')] += span(e)
    count[e.get('data-kind')] += 1
out['group_n'] = count['group']
# a group's totals fill its span
out['groups_whole'] = int(all(abs(sum(float(e.get('data-' + k + '-ms')) for k in
                                      ('fw', 'bw', 'recompute', 'comm', 'p2p', 'idle', 'grads', 'optimizer'))
                                  - span(e)) <= 1e-6 * span(e) for e in ev if e.get('data-kind') == 'group'))
for k in ('fw', 'bw', 'recompute', 'comm', 'p2p', 'idle', 'grads', 'optimizer'):
    out[k + '_ms'] = kinds[k]
    out[k + '_n'] = count[k]
# the ranks' time not spent computing, over the pipeline: the bubble
out['idle_frac'] = (kinds['idle'] + kinds['p2p']) / (len(stages) * pipe)
out['grads_start'] = min([float(e.get('data-start')) for e in ev if e.get('data-kind') == 'grads'] or [-1])
# every (stage, kind, micro-batch, chunk) of fw/bw once; chunks on their rank
seen = defaultdict(int)
bad_chunk = 0
for e in ev:
    if e.get('data-kind') in ('fw', 'bw'):
        seen[(e.get('data-stage'), e.get('data-kind'), e.get('data-mb'), e.get('data-chunk'))] += 1
        if int(e.get('data-chunk')) % len(stages) != int(e.get('data-stage')):
            bad_chunk = 1
out['ops_once'] = int(all(v == 1 for v in seen.values()))
out['ops'] = len(seen)
out['bad_chunk'] = bad_chunk
out['chunks_per_stage'] = len({e.get('data-chunk') for e in ev
                               if e.get('data-kind') == 'fw' and e.get('data-stage') == '0'})
out['rec_stage0'] = sum(span(e) for e in ev if e.get('data-kind') == 'recompute' and e.get('data-stage') == '0')
for k in sys.argv[2:]:
    print(out[k])
EOF
tl () { python3 "$TMP/tl.py" "$@" 2>/dev/null || echo fail; }
# near A B TOL: |A/B - 1| <= TOL (both from different sources)
near () { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN{n="^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$"
  if (a !~ n || b !~ n) { print 1; exit }   # a missing number is no match
  d=(b==0)?a:a/b-1; print (d<=t&&d>=-t)?0:1}'; }
csvf () { awk -F, -v c="$2" 'NR==1{for(i=1;i<=NF;i++) if($i==c) k=i} NR==2{print $k}' "$1"; }

S="--model gpt3-2.7b --gpu h100 --mode train --batch 16 --predictor roofline"

# ---- the step's timeline ----
run_pm $S --strategy tp=2,pp=4,dp=1 --plot "$TMP/a.svg" --format csv
cp "$TMP/out" "$TMP/a.csv"
ok $([ "$rc" -eq 0 ] && [ "$(tl "$TMP/a.svg" stages)" = 4 ] && echo 0 || echo 1) \
  "--plot with --strategy writes a well-formed SVG timeline"
ok $([ "$(tl "$TMP/a.svg" stages rows | tr '\n' ' ')" = "4 4 " ] && echo 0 || echo 1) "one row per pipeline stage"
ok $(near "$(tl "$TMP/a.svg" end)" "$(csvf "$TMP/a.csv" step_ms)" 1e-7) \
  "the last event ends at the predicted step (step_ms)"
ok $([ "$(tl "$TMP/a.svg" tiled)" = 1 ] && echo 0 || echo 1) "each row is tiled from 0 to the step's end"
ok $(near "$(tl "$TMP/a.svg" idle_frac)" "$(csvf "$TMP/a.csv" bubble)" 1e-5) \
  "idle and waited time over the stages is the predicted bubble"
ok $([ "$(tl "$TMP/a.svg" ops ops_once | tr '\n' ' ')" = "128 1 " ] && echo 0 || echo 1) \
  "each of the 16 micro-batches runs forward and backward once on each of the 4 stages"
ok $(near "$(tl "$TMP/a.svg" optimizer_ms)" "$(awk -v o="$(csvf "$TMP/a.csv" optimizer_ms)" 'BEGIN{printf "%.12g", 4*o}')" 1e-6) \
  "every stage ends with the optimizer step"
ok $(near "$(tl "$TMP/a.svg" comm_n)" 128 0) "exposed tp collectives are drawn in each forward and backward"
ok $(grep -q '<title>timeline: gpt3-2.7b, training step on 8 x .*tp=2 pp=4 dp=1.*step 7[0-9.]* ms</title>' "$TMP/a.svg" &&
     grep -q 'class="ev"[^>]*data-kind="idle"' "$TMP/a.svg" && grep -q 'class="legend" data-kind="idle"' "$TMP/a.svg" &&
     grep -q 'class="tick"' "$TMP/a.svg" && echo 0 || echo 1) "title with model, GPUs, strategy and step; ticks; legend"

# more stages at the same 16 micro-batches: a larger bubble
run_pm $S --strategy tp=2,pp=2,dp=1 --plot "$TMP/p2.svg" --format csv
cp "$TMP/out" "$TMP/p2.csv"
run_pm $S --strategy tp=2,pp=8,dp=1 --plot "$TMP/p8.svg" --format csv
b2=$(tl "$TMP/p2.svg" idle_frac) b4=$(tl "$TMP/a.svg" idle_frac) b8=$(tl "$TMP/p8.svg" idle_frac)
ok $(awk -v a="$b2" -v b="$b4" -v c="$b8" 'BEGIN{print (a>0&&a<b&&b<c)?0:1}') \
  "the bubble grows with pp at fixed micro-batches ($b2 < $b4 < $b8)"
ok $(near "$b8" "$(csvf "$TMP/out" bubble)" 1e-5) "pp=8: the drawn bubble is the predicted one"

# one stage: no bubble
run_pm $S --strategy tp=2,pp=1,dp=1 --plot "$TMP/one.svg" --format csv
ok $([ "$rc" -eq 0 ] && [ "$(tl "$TMP/one.svg" stages idle_n p2p_n | tr '\n' ' ')" = "1 0 0 " ] &&
     ! grep -q 'class="ev"[^>]*data-kind="idle"' "$TMP/one.svg" && echo 0 || echo 1) "a one-stage step has no bubble rectangle"
ok $(near "$(tl "$TMP/one.svg" end)" "$(csvf "$TMP/out" step_ms)" 1e-7) "one stage: it ends at the step"

# data parallelism: the exposed gradient sync after the pipeline, as predicted
run_pm $S --strategy tp=2,pp=2,dp=2,kernels=megatron --plot "$TMP/dp.svg" --format csv
g=$(csvf "$TMP/out" grads_ms)
ok $(awk -v g="$g" 'BEGIN{print (g>0)?0:1}') "dp=2 with Megatron's kernels has exposed gradients ($g ms)"
ok $(near "$(tl "$TMP/dp.svg" grads_ms)" "$(awk -v g="$g" 'BEGIN{printf "%.12g", 2*g}')" 1e-6) \
  "each stage draws the exposed gradient sync"
ok $(near "$(tl "$TMP/dp.svg" grads_start)" "$(csvf "$TMP/out" pipeline_ms)" 1e-7) "it starts when the pipeline ends"

# recompute: per stage the recomputed forwards of each micro-batch
run_pm $S --strategy tp=2,pp=4,dp=1,recompute=full --plot "$TMP/rc.svg" --format json
ok $(near "$(tl "$TMP/rc.svg" rec_stage0)" "$(jq '.predictions[0].stages[0].recompute_ms * 16' "$TMP/out")" 1e-6) \
  "recompute=full: stage 0 draws 16 x its predicted recompute"

# interleaved: a rank's chunks, each on its own rank
run_pm $S --strategy tp=2,pp=4,dp=1,vp=2,schedule=interleaved --plot "$TMP/vp.svg" --format csv
ok $([ "$rc" -eq 0 ] && [ "$(tl "$TMP/vp.svg" chunks_per_stage bad_chunk ops ops_once | tr '\n' ' ')" = "2 0 256 1 " ] &&
     echo 0 || echo 1) "vp=2: two chunks per stage, chunk c on rank c mod pp, each op once"
ok $(near "$(tl "$TMP/vp.svg" idle_frac)" "$(csvf "$TMP/out" bubble)" 1e-5) "vp=2: the drawn bubble is the predicted one"
ok $(near "$(tl "$TMP/vp.svg" end)" "$(csvf "$TMP/out" step_ms)" 1e-7) "vp=2: it ends at the step"

# many micro-batches: runs of operations narrower than 3 px drawn as one rectangle with their
# totals, the bubble still the predicted one, the file small
run_pm $S --batch 256 --strategy tp=2,pp=4,dp=1 --plot "$TMP/many.svg" --format csv
ok $([ "$rc" -eq 0 ] && [ "$(tl "$TMP/many.svg" tiled groups_whole | tr '\n' ' ')" = "1 1 " ] &&
     [ "$(tl "$TMP/many.svg" group_n)" -gt 0 ] && [ "$(wc -c <"$TMP/many.svg")" -lt 300000 ] &&
     grep -q 'class="legend" data-kind="group"' "$TMP/many.svg"; echo $?) \
  "256 micro-batches: narrow operations grouped ($(tl "$TMP/many.svg" group_n) groups, $(wc -c <"$TMP/many.svg") bytes), rows tiled"
ok $(near "$(tl "$TMP/many.svg" idle_frac)" "$(csvf "$TMP/out" bubble)" 1e-5) \
  "256 micro-batches: the groups' idle and waits keep the drawn bubble the predicted one"
ok $([ "$(tl "$TMP/a.svg" group_n)" = 0 ]; echo $?) "16 micro-batches: every operation drawn on its own"

# ---- one stage's per-op table ----
P="$S --strategy tp=2,pp=4,dp=1,recompute=selective"
run_pm $P --format json
cp "$TMP/out" "$TMP/st.json"
run_pm $P --per-op --format csv
# The relation: with vp=1 and no overlapped collective, stage 0's forward (--explain's
# per-stage table, the JSON's stages[0]) is the sum of the rows' fw_ms times their count;
# its backward the rows' bw_ms + acc_ms times their count, plus the recompute.
ok $([ "$rc" -eq 0 ] && head -1 "$TMP/out" | grep -q '^predictor,stage,chunk,node,op,kind,shape,dtype,layer,count,fw_ms,bw_ms,acc_ms,collective$' &&
     awk -F, 'NR>1 && $2!=0 {b++} END{print (NR>10&&!b)?0:1}' "$TMP/out" | grep -q 0 && echo 0 || echo 1) \
  "--per-op --strategy --format csv: the ops of stage 0"
ok $(near "$(awk -F, 'NR>1{s+=$10*$11} END{printf "%.12g", s}' "$TMP/out")" "$(jq '.predictions[0].stages[0].fw_ms' "$TMP/st.json")" 1e-7) \
  "the rows' forward times their count sum to stage 0's forward"
ok $(near "$(awk -F, -v r="$(jq '.predictions[0].stages[0].recompute_ms' "$TMP/st.json")" 'NR>1{s+=$10*($12+$13)} END{printf "%.12g", s+r}' "$TMP/out")" \
     "$(jq '.predictions[0].stages[0].bw_ms' "$TMP/st.json")" 1e-7) \
  "the rows' backward times their count, plus the recompute, sum to stage 0's backward"
ok $(awk -F, 'NR>1 && $6=="COMM" {c++; if ($14 !~ /^tp allreduce /) b++} NR>1 && $6=="FC" && $8!="bf16" {b++}
     END{print (c>0&&!b)?0:1}' "$TMP/out") "collectives name their dimension; the GEMMs are bf16"
run_pm $P --per-op --format json
ok $(jq -e '.predictions[0].per_op | .stage == 0 and .layers == 8 and (.ops | length) > 10' "$TMP/out" >/dev/null &&
     near "$(jq '.predictions[0].per_op | .bw_ms + .recompute_ms' "$TMP/out")" "$(jq '.predictions[0].stages[0].bw_ms' "$TMP/st.json")" 1e-7 |
     grep -q 0 && echo 0 || echo 1) "--per-op --format json: per_op names the stage, and adds up"
run_pm $P --per-op=1 --format csv
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 && $2 == 1 && $3 == 1 { n++ } NR > 1 && ($2 != 1 || $3 != 1) { bad++ }
       END { exit !(n > 10 && bad == 0) }' "$TMP/out"; echo $?) "--per-op=1: the ops of stage 1's chunk, named so"
expect_one_line 2 "pipeline chunk 9: the strategy has 4 \(0 to 3, model order\)" \
  "--per-op=9 of 4 chunks: refused, naming the range" -- $P --per-op=9
expect_one_line 2 "--per-op=2: a pipeline chunk of a --strategy" \
  "--per-op=2 without a strategy: refused" -- --model gpt3-2.7b --gpu h100 --per-op=2
run_pm $P --per-op
ok $(grep -q '^per-op, roofline: pipeline stage 0, chunk 0 of 4 (8 layers, the embedding)' "$TMP/out" && echo 0 || echo 1) \
  "the table names the stage"

# ---- the search's scaling chart ----
cat > "$TMP/sc.py" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
best = [c for c in root.iter(ns + 'circle') if c.get('class') == 'best']
top = [c for c in root.iter(ns + 'circle') if c.get('class') == 'top']
g = [int(c.get('data-gpus')) for c in best]
x = [float(c.get('cx')) for c in best]
print(' '.join(map(str, g)))
print(int(g == sorted(g) and len(set(g)) == len(g) and all(a < b for a, b in zip(x, x[1:]))))
print(len(top), ' '.join(sorted({c.get('data-gpus') for c in top})))
print(best[g.index(int(sys.argv[2]))].get('data-value'), best[g.index(int(sys.argv[2]))].get('data-strategy'))
EOF
tiny="$TMP/tiny.json"
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 64, "n_head": 4, "n_inner": 256,\n "n_positions": 64, "vocab_size": 128}\n' > "$tiny"
Q="search --model $tiny --gpus-per-node 4 --global-batch 16 --seq 32 --max-cp 1 --jobs 1"
run_pm $Q --gpus 4 --tokens 1e12 --top 3 --format csv --plot "$TMP/s.svg"
cp "$TMP/out" "$TMP/s.csv"
python3 "$TMP/sc.py" "$TMP/s.svg" 4 > "$TMP/sc" 2>/dev/null
ok $([ "$rc" -eq 0 ] && [ "$(sed -n 1p "$TMP/sc")" = "1 2 4 8 16" ] && [ "$(sed -n 2p "$TMP/sc")" = 1 ] && echo 0 || echo 1) \
  "search --gpus 4 --plot: one point per GPU count, 1 to 16, in increasing x"
first=$(python3 -c 'import csv, sys; r = next(csv.DictReader(open(sys.argv[1]))); print(r["train_hours"], r["strategy"])' "$TMP/s.csv")
ok $([ "$(sed -n 3p "$TMP/sc")" = "3 4" ] && [ "$(sed -n 4p "$TMP/sc" | cut -d' ' -f2)" = "${first#* }" ] &&
     near "$(sed -n 4p "$TMP/sc" | cut -d' ' -f1)" "${first%% *}" 1e-5 | grep -q 0 &&
     echo 0 || echo 1) "the top 3 at the requested count; its point is the table's best, in hours to train"
run_pm $Q --gpus 2 --format csv
cp "$TMP/out" "$TMP/plain.csv"
run_pm $Q --gpus 2,8,1 --format csv --plot "$TMP/l.svg"
ok $([ "$rc" -eq 0 ] && cmp -s "$TMP/out" "$TMP/plain.csv" &&
     [ "$(python3 "$TMP/sc.py" "$TMP/l.svg" 2 2>/dev/null | head -1)" = "1 2 8" ] && echo 0 || echo 1) \
  "--gpus 2,8,1: the listed counts drawn, the output the first count's, unchanged"

# ---- refusals: nothing half-written ----
expect_fail 1 "$TMP/no/dir/t.svg: cannot write" "an unwritable timeline path is named, exit 1" -- \
  $S --strategy tp=2,pp=4 --plot "$TMP/no/dir/t.svg"
expect_fail 2 "--strategy with --gen: --plot" "--plot with --gen and --strategy is refused" -- \
  --model gpt3-2.7b --mode inf --gen 16 --strategy tp=2 --plot "$TMP/g.svg"
expect_fail 1 "$TMP/no/dir/s.svg: cannot write" "search --plot to an unwritable path: named, before the search" -- \
  $Q --gpus 4 --plot "$TMP/no/dir/s.svg"
ok $([ -z "$(ls "$TMP" | grep -e '\.tmp' -e '^g.svg$')" ] && echo 0 || echo 1) "no chart and no temporary file left"
expect_fail 2 "a list of GPU counts" "a --gpus list without --plot is refused" -- $Q --gpus 2,4
finish
