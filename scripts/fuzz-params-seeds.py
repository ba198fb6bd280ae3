# fuzz-params-seeds.py: a small parameter file cut from a trained one (fuzz-params' seeds): networks to one hidden layer of 4, ensembles to one member, tables to 24 rows.
# Usage: python3 scripts/fuzz-params-seeds.py params/habitat.params tests/fuzz/params/habitat-small.params
import re, struct, sys
src, dst = sys.argv[1], sys.argv[2]
raw = open(src, 'rb').read()
end = raw.index(b'\ndata\n') + len(b'\ndata\n')
lines = raw[:end].decode().split('\n')[:-2]
keys, tensors = [], []
for l in lines[1:]:
    if l.startswith('tensor '):
        _, n, r, c = l.split(); tensors.append((n, int(r), int(c)))
    elif not l.startswith('pad:'):
        k, v = l.split(': ', 1); keys.append([k, v])
vals, off = {}, end
for n, r, c in tensors:
    cnt = r * c
    vals[n] = (r, c, struct.unpack('<%dd' % cnt, raw[off:off + 8 * cnt])); off += 8 * cnt
def member_ok(name):
    m = re.match(r'^[a-z_0-9]+\.(\d+)\.', name)
    return not m or m.group(1) == '1'
H = 4
newk, newt = [], []
nets = {}
for k, v in keys:
    if not member_ok(k): continue
    if k == 'members': v = '1'
    if k.endswith('.layers'):
        w = v.split(','); nets[k[:-7]] = (int(w[0]), int(w[-1])); v = '%s,%d,%s' % (w[0], H, w[-1])
    if k in ('command', 'data') or k.startswith('throttled.') or k.endswith('.training'): v = v[:60]
    newk.append((k, v))
def cut(name, rows, cols):
    r, c, v = vals[name]
    return [v[i * c + j] for i in range(rows) for j in range(cols)]
for n, r, c in tensors:
    if not member_ok(n): continue
    m = re.match(r'^(.*)\.(w|b)(\d+)$', n)
    if m and m.group(1) in nets:
        pre, kind, l = m.group(1), m.group(2), int(m.group(3))
        nin, nout = nets[pre]
        if l == 0: shape = (H, nin) if kind == 'w' else (1, H)
        else:
            last = max(int(re.match(r'.*\.w(\d+)$', t[0]).group(1)) for t in tensors if re.match(re.escape(pre) + r'\.w\d+$', t[0]))
            if l != last: continue
            shape = (nout, H) if kind == 'w' else (1, nout)
        newt.append(('%s.%s%d' % (pre, kind, 0 if l == 0 else 1), shape[0], shape[1], cut(n, *shape)))
        continue
    rows = r if r <= 2 else min(r, 24)
    newt.append((n, rows, c, cut(n, rows, c)))
for i, (k, v) in enumerate(newk):
    if k == 'reference_rows':
        newk[i] = (k, str([t for t in newt if t[0] == 'reference'][0][1]))
out = 'perfmod-params 1\n' + ''.join('%s: %s\n' % kv for kv in newk) + ''.join('tensor %s %d %d\n' % (n, r, c) for n, r, c, _ in newt)
at = len(out) + len('pad: \ndata\n')
out += 'pad: ' + '.' * ((8 - at % 8) % 8) + '\ndata\n'
data = b''.join(struct.pack('<%dd' % len(v), *v) for *_, v in newt)
open(dst, 'wb').write(out.encode() + data)
print(dst, len(out) + len(data))
