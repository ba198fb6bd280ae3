/* html.c: --html FILE: one self-contained page of a command's answer (its JSON, its chart, sortable tables, the memory breakdown, a Pareto chart), nothing fetched from outside. */
#include <config.h>

#include <string.h>

#include "internal.h"

static const char page_style[] =
  "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
  "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}"
  ".assumed{color:#555;font-size:13px}"
  "table{border-collapse:collapse;font-size:13px;margin:4px 0}"
  "th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}"
  "th{background:#f3f3f3;cursor:pointer;user-select:none}th:hover{background:#e6eefa}"
  "th[data-sorted=asc]::after{content:' \\25B2'}th[data-sorted=desc]::after{content:' \\25BC'}"
  "td.text{text-align:left}tr:hover td{background:#f7faff}"
  ".chart svg{max-width:100%;height:auto;border:1px solid #eee}"
  ".note{color:#777;font-size:12px}.wrap{overflow-x:auto}"
  ".key{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}";

/* The page's script: the answer's rows as sortable tables (click a column; ?sort=NAME
 * and &desc=1 sort on load), the memory as a stacked bar, the search's configurations
 * as a Pareto chart of step time against memory.  Plain DOM, no library. */
static const char page_script[] =
  "'use strict';\n"
  "const data = JSON.parse(document.getElementById('perfmod-data').textContent);\n"
  "const $ = (t, a, kids) => { const e = document.createElement(t);"
  " for (const k in a || {}) e.setAttribute(k, a[k]);"
  " for (const c of kids || []) e.append(c); return e; };\n"
  "const svgNS = 'http://www.w3.org/2000/svg';\n"
  "const S = (t, a) => { const e = document.createElementNS(svgNS, t);"
  " for (const k in a) e.setAttribute(k, a[k]); return e; };\n"
  "function flat(o, pre, out) {\n"
  "  out = out || {};\n"
  "  for (const k in o) {\n"
  "    const v = o[k], n = pre ? pre + '.' + k : k;\n"
  "    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {\n"
  "      if (k === 'strategy' && 'spec' in v) out[n] = v.spec; else flat(v, n, out);\n"
  "    } else if (!Array.isArray(v)) out[n] = v;\n"
  "  }\n"
  "  return out;\n"
  "}\n"
  "function fmt(v) {\n"
  "  if (v === null || v === undefined) return '-';\n"
  "  if (typeof v === 'number') return Number.isInteger(v) ? String(v)"
  " : Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);\n"
  "  return String(v);\n"
  "}\n"
  "function table(id, rows) {\n"
  "  const cols = [];\n"
  "  for (const r of rows) for (const k in r) if (!cols.includes(k)) cols.push(k);\n"
  "  const head = $('tr', {}, cols.map(c => $('th', {'data-col': c}, [c])));\n"
  "  const body = $('tbody');\n"
  "  const t = $('table', {id: id, class: 'sortable'}, [$('thead', {}, [head]), body]);\n"
  "  const fill = list => { body.replaceChildren(...list.map(r => $('tr', {}, cols.map(c => {\n"
  "    const v = r[c];\n"
  "    return $('td', {class: typeof v === 'number' ? 'num' : 'text', title: c + ': ' + v}, [fmt(v)]);\n"
  "  })))); };\n"
  "  fill(rows);\n"
  "  t.sortBy = (c, desc) => {\n"
  "    const key = r => r[c] === null || r[c] === undefined ? null : r[c];\n"
  "    const sorted = rows.slice().sort((a, b) => {\n"
  "      const x = key(a), y = key(b);\n"
  "      if (x === null || y === null) return (x === null) - (y === null);\n"
  "      const d = typeof x === 'number' && typeof y === 'number' ? x - y"
  " : String(x).localeCompare(String(y));\n"
  "      return desc ? -d : d;\n"
  "    });\n"
  "    for (const th of head.children)\n"
  "      th.dataset.sorted = th.dataset.col === c ? (desc ? 'desc' : 'asc') : '';\n"
  "    fill(sorted);\n"
  "  };\n"
  "  for (const th of head.children)\n"
  "    th.addEventListener('click', () => t.sortBy(th.dataset.col, th.dataset.sorted === 'asc'));\n"
  "  return t;\n"
  "}\n"
  "function section(title, kids) {\n"
  "  document.getElementById('content').append($('h2', {}, [title]), ...kids);\n"
  "}\n"
  "function memoryBar(m, label) {\n"
  "  const parts = ['weights', 'gradients', 'optimizer', 'activations', 'kv_cache', 'reserve'];\n"
  "  const colour = ['#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#bbbbbb'];\n"
  "  const used = parts.reduce((s, p) => s + (m[p] || 0), 0), cap = m.capacity || used;\n"
  "  const full = Math.max(used, cap), W = 900, x0 = 10;\n"
  "  const g = S('svg', {width: W + 20, height: 70, viewBox: '0 0 ' + (W + 20) + ' 70',"
  " class: 'memory'});\n"
  "  let x = x0;\n"
  "  parts.forEach((p, i) => {\n"
  "    const v = m[p] || 0; if (!(v > 0)) return;\n"
  "    const w = v / full * W;\n"
  "    const r = S('rect', {x: x, y: 8, width: w, height: 24, fill: colour[i], 'data-part': p});\n"
  "    const t = S('title', {}); t.textContent = p + ': ' + v.toFixed(2) + ' GiB'; r.append(t);\n"
  "    g.append(r); x += w;\n"
  "  });\n"
  "  const c = x0 + cap / full * W;\n"
  "  g.append(S('line', {x1: c, x2: c, y1: 2, y2: 38, stroke: '#d62728', 'stroke-width': 2}));\n"
  "  const t = S('text', {x: x0, y: 56, 'font-size': 12}); t.textContent = label + ': ' +"
  " used.toFixed(2) + ' of ' + fmt(cap) + ' GiB (red: the capacity; hover a part)';\n"
  "  g.append(t);\n"
  "  const key = $('p', {class: 'note'}, parts.filter(p => m[p] > 0).flatMap(p => [$('span',"
  " {class: 'key', style: 'background:' + colour[parts.indexOf(p)]}), p + ' ' + m[p].toFixed(2)]));\n"
  "  return $('div', {class: 'chart'}, [g, key]);\n"
  "}\n"
  "function pareto(rows) {\n"
  "  const pts = rows.filter(r => r.step_ms > 0 && r['memory_gib.total'] > 0);\n"
  "  if (pts.length < 2) return null;\n"
  "  const W = 640, H = 360, L = 70, B = 320, T = 20, R = 620;\n"
  "  const xs = pts.map(p => p['memory_gib.total']), ys = pts.map(p => p.step_ms);\n"
  "  const x0 = Math.min(...xs) * 0.95, x1 = Math.max(...xs) * 1.05;\n"
  "  const y0 = Math.min(...ys) * 0.95, y1 = Math.max(...ys) * 1.05;\n"
  "  const X = v => L + (v - x0) / (x1 - x0 || 1) * (R - L), Y = v => B - (v - y0) / (y1 - y0 || 1) * (B - T);\n"
  "  const g = S('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'pareto'});\n"
  "  g.append(S('rect', {x: L, y: T, width: R - L, height: B - T, fill: 'none', stroke: '#333'}));\n"
  "  const lx = S('text', {x: (L + R) / 2, y: B + 30, 'text-anchor': 'middle', 'font-size': 12});\n"
  "  lx.textContent = 'memory per GPU (GiB)'; g.append(lx);\n"
  "  const ly = S('text', {transform: 'translate(18 ' + (T + B) / 2 + ') rotate(-90)',"
  " 'text-anchor': 'middle', 'font-size': 12});\n"
  "  ly.textContent = 'step (ms)'; g.append(ly);\n"
  "  for (const [v, x, y, a] of [[x0, L, B + 14, 'start'], [x1, R, B + 14, 'end']]) {\n"
  "    const t = S('text', {x: x, y: y, 'text-anchor': a, 'font-size': 11}); t.textContent = fmt(v); g.append(t); }\n"
  "  for (const [v, y] of [[y0, B], [y1, T + 10]]) {\n"
  "    const t = S('text', {x: L - 4, y: y, 'text-anchor': 'end', 'font-size': 11}); t.textContent = fmt(v); g.append(t); }\n"
  "  for (const p of pts) {\n"
  "    const front = !pts.some(q => q !== p && q.step_ms <= p.step_ms &&"
  " q['memory_gib.total'] <= p['memory_gib.total'] &&"
  " (q.step_ms < p.step_ms || q['memory_gib.total'] < p['memory_gib.total']));\n"
  "    const c = S('circle', {cx: X(p['memory_gib.total']), cy: Y(p.step_ms), r: front ? 5 : 3,"
  " fill: front ? '#ff7f0e' : '#1f77b4', class: front ? 'front' : 'point'});\n"
  "    const t = S('title', {}); t.textContent = (p.strategy || '') + ': ' + fmt(p.step_ms) +"
  " ' ms, ' + fmt(p['memory_gib.total']) + ' GiB'; c.append(t); g.append(c);\n"
  "  }\n"
  "  return $('div', {class: 'chart'}, [g, $('p', {class: 'note'}, ['orange: no other"
  " configuration is both faster and smaller (the Pareto front); hover a point'])]);\n"
  "}\n"
  "function render() {\n"
  "  document.getElementById('assumed').textContent = data.assumed ? 'assumed: ' + data.assumed : '';\n"
  "  let rows = [], name = 'rows';\n"
  "  if (data.command === 'predict' && data.by_gpu) {\n"
  "    for (const a of data.by_gpu) for (const p of a.predictions) rows.push(flat(Object.assign({gpu: a.gpu}, p)));\n"
  "    name = 'predictions';\n"
  "  } else if (data.command === 'predict') { rows = data.predictions.map(p => flat(p)); name = 'predictions'; }\n"
  "  else if (data.command === 'search') { rows = data.best.map(b => flat(b)); name = 'configurations'; }\n"
  "  else if (data.command === 'search --serve') { rows = data.frontier.map(p => flat(p)); name = 'the frontier'; }\n"
  "  else if (data.command === 'serve') {\n"
  "    const f = flat(data); rows = Object.keys(f).filter(k => typeof f[k] === 'number')"
  ".map(k => ({quantity: k, value: f[k]})); name = 'the run';\n"
  "  } else if (Array.isArray(data.rows)) rows = data.rows;\n"
  "  const t = table('rows', rows);\n"
  "  section(name + ' (click a column to sort)', [$('div', {class: 'wrap'}, [t])]);\n"
  "  const q = new URLSearchParams(location.search);\n"
  "  if (q.get('sort')) t.sortBy(q.get('sort'), q.get('desc') === '1');\n"
  "  const p0 = data.predictions && data.predictions[0];\n"
  "  if (p0 && p0.memory_gib) section('memory per GPU', [memoryBar(p0.memory_gib, p0.predictor)]);\n"
  "  if (data.command === 'serve' && data.memory_gib) section('memory per GPU', [memoryBar(data.memory_gib, 'serving')]);\n"
  "  if (data.command === 'search') { const p = pareto(rows); if (p) section('step time against memory', [p]); }\n"
  "  const chart = document.getElementById('chart');\n"
  "  if (chart.children.length) document.getElementById('content').append($('h2', {}, ['chart (hover for details)']), chart);\n"
  "  document.body.dataset.rendered = rows.length;\n"
  "}\n"
  "render();\n";

/* s written into a <script> element: "</" cannot end it early. */
static void
put_script_text (FILE *fp, const char *s, size_t len)
{
  for (size_t i = 0; i < len; i++) {
    fputc (s[i], fp);
    if (s[i] == '<' && i + 1 < len && s[i + 1] == '/')
      fputc ('\\', fp);               /* "<\/": the same text to JSON */
  }
}

int
html_page_write (const char *path, const char *title, const char *json, size_t json_len,
                 const char *svg, size_t svg_len)
{
  char *tmp;
  FILE *fp = atomic_open (path, &tmp);
  if (fp == NULL)
    return -1;
  fprintf (fp, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           "<meta name=\"generator\" content=\"perfmod %s\">\n<title>perfmod: ", PACKAGE_VERSION);
  svg_put_escaped (fp, title);
  fprintf (fp, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", page_style);
  svg_put_escaped (fp, title);
  fputs ("</h1>\n<p class=\"assumed\" id=\"assumed\"></p>\n<div id=\"content\"></div>\n"
         "<div class=\"chart\" id=\"chart\">", fp);
  if (svg) {                            /* the chart inline, without its XML declaration */
    const char *s = strstr (svg, "<svg");
    if (s)
      fwrite (s, 1, svg_len - (size_t) (s - svg), fp);
  }
  fputs ("</div>\n<p class=\"note\">Written by perfmod " PACKAGE_VERSION "; the answer's JSON "
         "is in this page (script#perfmod-data).</p>\n"
         "<script type=\"application/json\" id=\"perfmod-data\">", fp);
  put_script_text (fp, json, json_len);
  fprintf (fp, "</script>\n<script>\n%s</script>\n</body>\n</html>\n", page_script);
  return atomic_commit (fp, tmp, path, !ferror (fp));
}
