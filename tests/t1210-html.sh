#!/bin/sh
# t1210-html.sh: --html FILE on predict, search, search --serve and serve: one self-contained page (nothing fetched), loaded in headless Chromium without console errors, its table sorting, its charts drawn (a screenshot), its JSON the command's; refusals.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 not found"
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
  skip_all "chromium not found (Debian: apt-get install chromium; .ci/run installs it)"
plan 17

# browse PAGE QUERY: the page's DOM after its script ran into $TMP/dom, the browser's console
# into $TMP/console (Chromium logs each console message and uncaught error as CONSOLE)
browse () {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$TMP/profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$1$2" >"$TMP/dom" 2>"$TMP/browser.err"
  grep 'CONSOLE' "$TMP/browser.err" >"$TMP/console"
}
# column NAME: the rendered table's cells of that column, in order
cat >"$TMP/col.py" <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.cols = []; s.rows = []; s.cell = None; s.intable = False
    def handle_starttag(s, t, a):
        a = dict(a)
        if t == 'table' and a.get('id') == 'rows': s.intable = True
        if s.intable and t == 'th': s.cols.append(a.get('data-col'))
        if s.intable and t == 'tr': s.rows.append([])
        if s.intable and t == 'td': s.cell = ''
    def handle_endtag(s, t):
        if t == 'table': s.intable = False
        if s.intable and t == 'td': s.rows[-1].append(s.cell); s.cell = None
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
p = P(); p.feed(open(sys.argv[1]).read())
k = p.cols.index(sys.argv[2])
for r in p.rows:
    if r: print(r[k])
PY
column () { python3 "$TMP/col.py" "$TMP/dom" "$1"; }
sorted_up () { awk 'NR > 1 && $1 + 0 < p + 0 { bad = 1 } { p = $1; n++ } END { exit bad || n < 2 }'; }
sorted_down () { awk 'NR > 1 && $1 + 0 > p + 0 { bad = 1 } { p = $1; n++ } END { exit bad || n < 2 }'; }
# alone PAGE: no script, style, image or link fetched from anywhere (the SVG namespace aside)
alone () {
  ! grep -Eo '(src|href)="[^"#][^"]*"|<link|@import|url\([^#]' "$1" | grep -q . &&
  ! sed 's#http://www.w3.org/2000/svg##g' "$1" | grep -q 'https\?://'
}

# ---- search: the configurations, sortable, and the Pareto chart ----
S="search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --top 12 --fix vp=1"
run_pm $S --html "$TMP/s.html" --format json
cp "$TMP/out" "$TMP/s.json"
ok $([ "$rc" -eq 0 ] && [ -s "$TMP/s.html" ] && alone "$TMP/s.html"; echo $?) \
  "search --html writes one self-contained page (nothing fetched)"
ok $(python3 - "$TMP/s.html" "$TMP/s.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
inner = re.search(r'<script type="application/json" id="perfmod-data">(.*?)</script>', page, re.S).group(1)
print(0 if json.loads(inner.replace('<\\/', '</')) == json.load(open(sys.argv[2])) else 1)
PY
) "the page holds the command's JSON answer, the same"
browse "$TMP/s.html" "?sort=step_ms"
ok $([ -s "$TMP/dom" ] && [ ! -s "$TMP/console" ] &&
     grep -q 'data-rendered="12"' "$TMP/dom"; echo $?) \
  "Chromium loads it without a console error and renders the 12 configurations"
[ -s "$TMP/console" ] && diag "$(head -3 "$TMP/console")"
ok $(column step_ms | sorted_up; echo $?) "?sort=step_ms: the table sorted by step, ascending"
browse "$TMP/s.html" "?sort=memory_gib.total&desc=1"
ok $(column memory_gib.total | sorted_down && grep -q 'data-sorted="desc"' "$TMP/dom"; echo $?) \
  "?sort=memory_gib.total&desc=1: by memory, descending, the column marked"
ok $(grep -q 'class="pareto"' "$TMP/dom" && grep -q 'class="front"' "$TMP/dom"; echo $?) \
  "the Pareto chart of step against memory, its front marked"

# ---- predict under a strategy: the timeline and the memory breakdown ----
P="--model gpt3-2.7b --gpu h100 --mode train --batch 16 --strategy tp=2,pp=4,dp=1 --predictor roofline,tile-mlp"
run_pm $P --html "$TMP/p.html"
ok $([ "$rc" -eq 0 ] && grep -q '^strategy: tp=2 pp=4' "$TMP/out" && alone "$TMP/p.html" &&
     grep -q '<title>timeline: ' "$TMP/p.html"; echo $?) \
  "predict --html: the page with the step's timeline inline, the table still on stdout"
browse "$TMP/p.html" ""
ok $([ ! -s "$TMP/console" ] && grep -q 'data-rendered="2"' "$TMP/dom" && grep -q 'class="memory"' "$TMP/dom" &&
     grep -q 'data-part="optimizer"' "$TMP/dom"; echo $?) \
  "predict's page: both predictors' rows, the memory breakdown, no console error"
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$TMP/profile" \
  --screenshot="$TMP/p.png" --window-size=1250,1600 "file://$TMP/p.html" >/dev/null 2>&1
ok $(python3 - "$TMP/p.png" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
ok = d[:8] == b'\x89PNG\r\n\x1a\n' and struct.unpack('>II', d[16:24]) == (1250, 1600)
print(0 if ok and len(d) > 30000 else 1)   # a blank page compresses to a few kB
PY
) "a screenshot of the page shows its charts (1250 x 1600, $(wc -c <"$TMP/p.png" 2>/dev/null) bytes, not blank)"
run_pm --model gpt3-2.7b --gpu h100 --batch 2 --seq 512 --html "$TMP/r.html" --format json
ok $([ "$rc" -eq 0 ] && grep -q 'class="class"' "$TMP/r.html" && jq -e '.command == "predict"' "$TMP/out" >/dev/null; echo $?) \
  "predict --html without a strategy: the roofline chart inline, the JSON on stdout"

# ---- serve and search --serve ----
run_pm serve --model llama3.1-8b --gpu h100 --isl 512 --osl 64 --concurrency 8 --html "$TMP/v.html"
browse "$TMP/v.html" "?sort=value&desc=1"
ok $([ "$rc" -eq 0 ] && alone "$TMP/v.html" && [ ! -s "$TMP/console" ] && grep -q 'class="memory"' "$TMP/dom" &&
     column value | sorted_down; echo $?) "serve --html: the run's numbers, sortable, and its memory"
run_pm search --serve --model llama3.1-8b --gpu h100 --gpus 2 --isl 512 --osl 64 --jobs 1 --html "$TMP/f.html"
browse "$TMP/f.html" "?sort=tpot_ms"
ok $([ "$rc" -eq 0 ] && alone "$TMP/f.html" && [ ! -s "$TMP/console" ] && grep -q '<title>serving frontier: ' "$TMP/f.html" &&
     column tpot_ms | sorted_up; echo $?) "search --serve --html: the frontier's points sortable, its chart inline"

# ---- the browser check can fail: a script error is caught ----
sed 's#</body>#<script>null.x = 1;</script></body>#' "$TMP/s.html" >"$TMP/bad.html"
browse "$TMP/bad.html" ""
ok $(grep -q 'Uncaught' "$TMP/console" && grep -q 'data-rendered="12"' "$TMP/dom"; echo $?) \
  "the search page with a throwing script added: the error shows in the console log the checks read"

# ---- refusals: nothing written ----
expect_fail 1 "no/such/dir/x.html" "--html into a missing directory: named, exit 1" -- \
  --model gpt3-2.7b --html "$TMP/no/such/dir/x.html"
ok $([ ! -e "$TMP/no" ]; echo $?) "... and leaves no file"
expect_one_line 2 "--html: a page of a prediction, a search or a serving run, not perfmod graph" \
  "perfmod graph --html is refused" -- graph --model gpt3-2.7b --html "$TMP/g.html"
expect_one_line 2 "a list ranks the GPUs' best layouts in one table; --html takes one GPU" \
  "search --html over a --gpu list is refused" -- $S --gpu h100,h200 --html "$TMP/l.html"
finish
