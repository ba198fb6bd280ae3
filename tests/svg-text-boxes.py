#!/usr/bin/env python3
# svg-text-boxes.py FILE.svg: the boxes of an SVG chart's text, from DejaVu Sans' advance widths
# (Debian's sans-serif), checked: each inside the canvas, none overlapping another, none
# crossing a polyline (a chart's curve).  Prints each fault and "N texts M bad"; exits 1
# when M > 0.
import sys, re, math, xml.etree.ElementTree as ET
NS = '{http://www.w3.org/2000/svg}'
# DejaVu Sans advance widths in em (Debian's sans-serif); bold about 10 % wider
ADV = {' ': .318, '!': .4, '"': .46, '#': .838, '$': .636, '%': .95, '&': .78, "'": .275, '(': .39, ')': .39,
       '*': .5, '+': .838, ',': .318, '-': .361, '.': .318, '/': .337, ':': .337, ';': .337, '<': .838,
       '=': .838, '>': .838, '?': .531, '@': 1.0, '[': .39, ']': .39, '_': .5, '{': .636, '}': .636,
       '|': .337, '~': .838, 'a': .613, 'b': .635, 'c': .55, 'd': .635, 'e': .615, 'f': .352, 'g': .635,
       'h': .634, 'i': .278, 'j': .278, 'k': .579, 'l': .278, 'm': .974, 'n': .634, 'o': .612, 'p': .635,
       'q': .635, 'r': .411, 's': .521, 't': .392, 'u': .634, 'v': .592, 'w': .818, 'x': .592, 'y': .592,
       'z': .525}
def advance(c):
    if c.isdigit(): return .636
    if c.isupper(): return .72
    return ADV.get(c, .64)
root = ET.parse(sys.argv[1]).getroot()
W, H = float(root.get('width')), float(root.get('height'))
def boxes(el, fs=12.0, bold=False, out=None):
    fs = float(el.get('font-size', fs)); bold = bold or el.get('font-weight') == 'bold'
    if el.tag == NS + 'text':
        txt = ''.join(el.itertext())
        w = sum(advance(c) for c in txt) * fs * (1.1 if bold else 1.0); a = el.get('text-anchor', 'start')
        x0 = -w if a == 'end' else -w / 2 if a == 'middle' else 0
        corners = [(x0, -0.75 * fs), (x0 + w, -0.75 * fs), (x0, 0.2 * fs), (x0 + w, 0.2 * fs)]
        tx, ty, ang = float(el.get('x', 0)), float(el.get('y', 0)), 0.0
        t = el.get('transform') or ''
        m = re.search(r'translate\(([-\d.e]+)[ ,]+([-\d.e]+)\)', t)
        if m: tx, ty = tx + float(m.group(1)), ty + float(m.group(2))
        m = re.search(r'rotate\(([-\d.e]+)\)', t)
        if m: ang = math.radians(float(m.group(1)))
        pts = [(tx + cx * math.cos(ang) - cy * math.sin(ang), ty + cx * math.sin(ang) + cy * math.cos(ang)) for cx, cy in corners]
        out.append((min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts), txt))
    for c in el:
        boxes(c, fs, bold, out)
    return out
b = boxes(root, out=[])
bad = 0
for x0, y0, x1, y1, t in b:
    if x0 < -0.5 or y0 < -0.5 or x1 > W + 0.5 or y1 > H + 0.5:
        print('outside', round(x0), round(y0), round(x1), round(y1), t[:50]); bad += 1
for i in range(len(b)):
    for j in range(i + 1, len(b)):
        p, q = b[i], b[j]
        if p[0] < q[2] - 0.5 and q[0] < p[2] - 0.5 and p[1] < q[3] - 0.5 and q[1] < p[3] - 0.5:
            print('overlap', p[4][:40], '|', q[4][:40]); bad += 1
# a curve: its segments sampled every pixel against each box
for pl in root.iter(NS + 'polyline'):
    pts = [tuple(map(float, p.split(','))) for p in pl.get('points').split()]
    for (ax, ay), (bx, by) in zip(pts, pts[1:]):
        n = max(1, int(math.hypot(bx - ax, by - ay)))
        for x0, y0, x1, y1, t in b:
            if any(x0 < ax + (bx - ax) * k / n < x1 and y0 < ay + (by - ay) * k / n < y1
                   for k in range(n + 1)):
                print('crosses the curve', t[:50]); bad += 1
print(len(b), 'texts', bad, 'bad')
sys.exit(1 if bad else 0)
