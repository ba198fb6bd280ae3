#!/bin/sh
# t0650-python.sh: the perfmod Python package over libperfmod gives the CLI's numbers (predict, search and serve) as a dict, and perfmod's reason as an exception.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 not found"
[ -f "$top_builddir/python/perfmod/__init__.py" ] || skip_all "the Python package was not configured"
plan 15
export PYTHONPATH="$top_builddir/python" PERFMOD_LIBRARY="$top_builddir/.libs/libperfmod.so.0"
"$PERFMOD" --model gpt3-2.7b --gpu h100 --mode train --batch 64 --seq 2048 --strategy tp=2,dp=4 \
  --predictor tile-mlp --format json > "$TMP/cli" 2>/dev/null
env $(san_env) python3 - "$TMP/cli" > "$TMP/out" 2>&1 <<'PY'
import json, sys, perfmod
cli = json.load(open(sys.argv[1]))["predictions"][0]
r = perfmod.predict("gpt3-2.7b", gpu="h100", strategy="tp=2,dp=4", batch=64, seq=2048,
                    predictor="tile-mlp")
print("same" if abs(r["step_ms"] / cli["step_ms"] - 1) < 1e-9 and
      abs(r["memory_total_gib"] / cli["memory_gib"]["total"] - 1) < 1e-9 and
      r["oom"] == cli["oom"] else "differ %r %r" % (r, cli))
print("dict" if isinstance(r, dict) and isinstance(r["oom"], bool) else "notdict")
try:
    perfmod.predict("gpt3-2.7b", gpu="h100", strategy="tp=3")
    print("noerror")
except perfmod.PerfmodError as e:
    print("error: %s" % e)
PY
ok $(grep -qx same "$TMP/out" && echo 0 || echo 1) "perfmod.predict gives the CLI's step and memory"
ok $(grep -qx dict "$TMP/out" && echo 0 || echo 1) "the result is a plain dict"
ok $(grep -q '^error: .*tp=3 does not divide the 32 attention heads' "$TMP/out" && echo 0 || echo 1) \
  "a refused request raises PerfmodError with perfmod's reason"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/out")"

# engine="sglang": the CLI's --engine=sglang (the MoE layers as SGLang's fused kernel)
"$PERFMOD" --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --strategy tp=2 \
  --engine=sglang --predictor tile-mlp --format json > "$TMP/ecli" 2>/dev/null
env $(san_env) python3 - "$TMP/ecli" > "$TMP/eout" 2>&1 <<'PY'
import json, sys, perfmod
cli = json.load(open(sys.argv[1]))["predictions"][0]
kw = dict(gpu="h100", mode="inf", strategy="tp=2", batch=4, seq=512, predictor="tile-mlp")
e = perfmod.predict("mixtral-8x7b", engine="sglang", **kw)
plain = perfmod.predict("mixtral-8x7b", **kw)
print("same" if abs(e["step_ms"] / cli["step_ms"] - 1) < 1e-9 and e["step_ms"] != plain["step_ms"]
      else "differ %r %r %r" % (e, plain, cli))
try:
    perfmod.predict("mixtral-8x7b", gpu="h100", engine="sglang")
    print("noerror")
except perfmod.PerfmodError as x:
    print("error: %s" % x)
PY
ok $(grep -qx same "$TMP/eout" && echo 0 || echo 1) \
  "perfmod.predict(engine=\"sglang\") gives the CLI's --engine=sglang step, not the eager one"
ok $(grep -q "^error: engine 'sglang': a serving engine's kernels are for mode inf" "$TMP/eout" && echo 0 || echo 1) \
  "engine with a training step raises PerfmodError"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/eout")"

# perfmod.search: the CLI's JSON for the same search, field for field
S="--model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --predictor tile-mlp --top 5 --tokens 1e10 --price-per-gpu-hour 2.5 --fix vp=1"
"$PERFMOD" search $S --format json > "$TMP/scli" 2>/dev/null
env $(san_env) python3 - "$TMP/scli" > "$TMP/sout" 2>&1 <<'PY'
import json, sys, perfmod
cli = json.load(open(sys.argv[1]))
with perfmod.Context() as ctx:
    r = ctx.search("gpt3-2.7b", gpu="h100", gpus=16, global_batch=64, seq=2048,
                   predictor="tile-mlp", top=5, tokens=1e10, price_per_gpu_hour=2.5, fix="vp=1")
m = perfmod.search("gpt3-2.7b", "h100", 16, 64, seq=2048, predictor="tile-mlp", top=5,
                   tokens=1e10, price_per_gpu_hour=2.5, fix="vp=1", jobs=2)
def close(a, b):
    return a == b or abs(a / b - 1) < 1e-9
same = (len(cli["best"]) == 5 and [b.keys() for b in r["best"]] == [b.keys() for b in cli["best"]] and
        all(b["strategy"] == c["strategy"] and b["rank"] == c["rank"] and
            all(close(b[k], c[k]) for k in ("step_ms", "tokens_per_s", "mfu", "train_hours",
                                            "cost_usd")) and
            close(b["memory_gib"]["total"], c["memory_gib"]["total"])
            for b, c in zip(r["best"], cli["best"])) and
        all(r[k] == cli[k] for k in cli if k not in ("best", "seconds")) and r.keys() == cli.keys())
print("same" if same else "differ %r %r" % (r, cli))
print("module" if m["best"] == r["best"] and m["pruned"] == r["pruned"] else "module differs %r" % m)
print("dict" if isinstance(r, dict) and isinstance(r["pruned"], dict) and
      isinstance(r["best"], list) and isinstance(r["best"][0], dict) else "notdict")
for bad in ({"gpus": 0, "global_batch": 8}, {"gpus": 8, "global_batch": 8, "fix": "tp=3"}):
    try:
        perfmod.search("gpt3-2.7b", gpu="h100", **bad)
        print("noerror")
    except perfmod.PerfmodError as e:
        print("error: %s" % e)
try:
    perfmod.search("gpt3-9b", gpu="h100", gpus=8, global_batch=8)
    print("noerror")
except perfmod.PerfmodError as e:
    print("error: %s" % e)
PY
ok $(grep -qx same "$TMP/sout" && grep -qx module "$TMP/sout" && echo 0 || echo 1) \
  "perfmod.search and Context.search give perfmod search --format json's counts and best, by its names"
ok $(grep -qx dict "$TMP/sout" && echo 0 || echo 1) "the search result is a plain dict of lists and dicts"
ok $(grep -q '^error: search: gpus 0: expected 1' "$TMP/sout" && grep -q '^error: .*is left to predict' "$TMP/sout" &&
     grep -q "^error: .*gpt3-9b" "$TMP/sout" && ! grep -q noerror "$TMP/sout" && echo 0 || echo 1) \
  "a refused search (gpus=0, impossible fix, unknown model) raises PerfmodError with perfmod's reason"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/sout")"

# perfmod.serve: perfmod serve --format json's numbers, by its names
"$PERFMOD" serve --model qwen3-32b --gpu h100 --strategy tp=2 --engine sglang --concurrency 32 \
  --isl 2048 --osl 128 --max-batch 32 --format json > "$TMP/vcli" 2>/dev/null
env $(san_env) python3 - "$TMP/vcli" > "$TMP/vout" 2>&1 <<'PY'
import json, sys, perfmod
cli = json.load(open(sys.argv[1]))
r = perfmod.serve("qwen3-32b", gpu="h100", strategy="tp=2", engine="sglang", concurrency=32,
                  isl=2048, osl=128, max_batch=32)
def close(a, b):
    return a == b or (a is not None and b is not None and abs(a / b - 1) < 1e-9)
same = (all(close(r[k][s], cli[k][s]) for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
            for s in ("mean", "p50", "p90", "p99")) and
        all(close(r[k], cli[k]) for k in ("output_tokens_per_s", "requests_per_s", "kv_peak",
                                          "kv_capacity_tokens", "requests", "preemptions")) and
        all(close(r["memory_gib"][k], cli["memory_gib"][k]) for k in ("weights", "kv_cache",
                                                                      "capacity")) and
        r["engine"] == cli["engine"] == "sglang" and r["assumed"] == cli["assumed"])
print("same" if same else "differ %r %r" % (r, cli))
try:
    perfmod.serve("qwen3-32b", gpu="h100", concurrency=4, isl=128)
    print("noerror")
except perfmod.PerfmodError as e:
    print("error: %s" % e)
PY
ok $(grep -qx same "$TMP/vout" && echo 0 || echo 1) "perfmod.serve gives perfmod serve --format json's numbers by its names"
ok $(grep -q '^error: serve needs --isl and --osl' "$TMP/vout" && echo 0 || echo 1) \
  "a refused serve raises PerfmodError with perfmod's reason"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/vout")"
# routing (--routing) reaches both entry points: perfmod.serve and perfmod.predict with an
# engine give the command line's numbers under a uniform router, which differ from the default's
for r in uniform powerlaw; do
  "$PERFMOD" serve --model qwen3-30b-a3b --gpu h100 --strategy tp=2,ep=2,etp=1 --concurrency 8 \
    --isl 512 --osl 32 --routing $r --format json > "$TMP/r$r" 2>/dev/null
done
"$PERFMOD" --model qwen3-30b-a3b --gpu h100 --mode inf --dtype bf16 --batch 1 --seq 16 \
  --engine=trtllm --strategy tp=2,ep=2,etp=1 --routing uniform --format json > "$TMP/pu" 2>/dev/null
env $(san_env) python3 - "$TMP/runiform" "$TMP/rpowerlaw" "$TMP/pu" > "$TMP/rout" 2>&1 <<'PY'
import json, sys, perfmod
u, p, pu = (json.load(open(f)) for f in sys.argv[1:4])
ru = perfmod.serve("qwen3-30b-a3b", gpu="h100", strategy="tp=2,ep=2,etp=1", concurrency=8,
                   isl=512, osl=32, routing="uniform")
rp = perfmod.serve("qwen3-30b-a3b", gpu="h100", strategy="tp=2,ep=2,etp=1", concurrency=8,
                   isl=512, osl=32)
q = perfmod.predict("qwen3-30b-a3b", gpu="h100", mode="inf", precision="bf16", batch=1, seq=16,
                    engine="trtllm", strategy="tp=2,ep=2,etp=1", routing="uniform")
ok = (abs(ru["tpot_ms"]["mean"] / u["tpot_ms"]["mean"] - 1) < 1e-9 and
      abs(rp["tpot_ms"]["mean"] / p["tpot_ms"]["mean"] - 1) < 1e-9 and
      u["tpot_ms"]["mean"] != p["tpot_ms"]["mean"] and
      abs(q["step_ms"] / pu["predictions"][0]["step_ms"] - 1) < 1e-9)
print("same" if ok else "differ %r %r %r %r %r" % (ru["tpot_ms"], u["tpot_ms"], rp["tpot_ms"], p["tpot_ms"], q["step_ms"]))
PY
ok $(grep -qx same "$TMP/rout" && echo 0 || echo 1) \
  "routing= in perfmod.serve and perfmod.predict gives --routing's numbers (uniform and the default differ)"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/rout")"
# dtype / precision "mxfp4" (MXFP4 experts) reach both entry points too, and differ from bf16
"$PERFMOD" serve --model qwen3-30b-a3b --gpu h100 --strategy tp=2,ep=2,etp=1 --concurrency 8 \
  --isl 512 --osl 32 --dtype mxfp4 --format json > "$TMP/m4" 2>/dev/null
"$PERFMOD" --model qwen3-30b-a3b --gpu h100 --mode inf --dtype mxfp4 --batch 1 --seq 16 \
  --engine=trtllm --strategy tp=2,ep=2,etp=1 --format json > "$TMP/pm4" 2>/dev/null
env $(san_env) python3 - "$TMP/m4" "$TMP/rpowerlaw" "$TMP/pm4" > "$TMP/mout" 2>&1 <<'PY'
import json, sys, perfmod
m, b, pm = (json.load(open(f)) for f in sys.argv[1:4])
r = perfmod.serve("qwen3-30b-a3b", gpu="h100", strategy="tp=2,ep=2,etp=1", concurrency=8,
                  isl=512, osl=32, dtype="mxfp4")
q = perfmod.predict("qwen3-30b-a3b", gpu="h100", mode="inf", precision="mxfp4", batch=1, seq=16,
                    engine="trtllm", strategy="tp=2,ep=2,etp=1")
ok = (abs(r["tpot_ms"]["mean"] / m["tpot_ms"]["mean"] - 1) < 1e-9 and
      m["tpot_ms"]["mean"] != b["tpot_ms"]["mean"] and
      abs(q["step_ms"] / pm["predictions"][0]["step_ms"] - 1) < 1e-9)
print("same" if ok else "differ %r %r %r %r" % (r["tpot_ms"], m["tpot_ms"], q["step_ms"], pm))
PY
ok $(grep -qx same "$TMP/mout" && echo 0 || echo 1) \
  "dtype=mxfp4 in perfmod.serve and precision=mxfp4 in perfmod.predict give --dtype mxfp4's numbers"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/mout")"
# Bad values raise ValueError or TypeError naming the argument before they reach C (a
# 64-bit field would wrap 2**64 + 8 into 8; batch=-8 aborted the interpreter); a closed
# context is refused; the interpreter lives on.
env $(san_env) python3 - > "$TMP/bout" 2>&1 <<'PY'
import perfmod
cases = [
    ("predict", dict(batch=-8), ValueError, "batch"),
    ("predict", dict(batch=2**64 + 8), ValueError, "batch"),
    ("predict", dict(seq=-(2**63)), ValueError, "seq"),
    ("predict", dict(nodes=2**63), ValueError, "nodes"),
    ("predict", dict(gpus_per_node=2**32 + 8), ValueError, "gpus_per_node"),
    ("predict", dict(batch=8.5), TypeError, "batch"),
    ("predict", dict(batch=True), TypeError, "batch"),
    ("predict", dict(batch="8"), TypeError, "batch"),
    ("predict", dict(strategy=8), TypeError, "strategy"),
    ("predict", dict(gpu="h1\0"), ValueError, "gpu"),
    ("search", dict(gpus=-1, global_batch=8), ValueError, "gpus"),
    ("search", dict(gpus=8, global_batch=8, tokens=float("nan")), ValueError, "tokens"),
    ("search", dict(gpus=8, global_batch=8, top=10**6), ValueError, "top"),
    ("serve", dict(concurrency=-1, isl=8, osl=8), ValueError, "concurrency"),
    ("serve", dict(concurrency=2, isl=8, osl=2**64), ValueError, "osl"),
    ("serve", dict(rate=float("inf"), isl=8, osl=8), ValueError, "rate"),
    ("serve", dict(concurrency=2, isl=8, osl=8, spec="mtp", spec_tokens=2, spec_accept=1.5),
     ValueError, "spec_accept"),
    ("serve", dict(concurrency=2, isl=8, osl=8, seed=-1), ValueError, "seed"),
]
bad = []
with perfmod.Context() as ctx:
    for fn, kw, exc, name in cases:
        try:
            getattr(ctx, fn)("gpt2-large", **kw)
            bad.append("%s %r: no exception" % (fn, kw))
        except exc as e:
            if name not in str(e):
                bad.append("%s %r: %r does not name %s" % (fn, kw, str(e), name))
        except Exception as e:
            bad.append("%s %r: %s %s" % (fn, kw, type(e).__name__, e))
print("cases %d bad %d" % (len(cases), len(bad)))
for b in bad:
    print("BAD", b)
ctx = perfmod.Context()
ctx.close()
try:
    ctx.predict("gpt2-large")
    print("closed: no error")
except perfmod.PerfmodError as e:
    print("closed: %s" % e)
ctx.close()
print("alive", perfmod.predict("gpt2-large", mode="inf", batch=1, seq=128)["step_ms"] > 0)
PY
ok $(grep -qx 'cases 18 bad 0' "$TMP/bout" && echo 0 || echo 1) \
  "18 bad values raise ValueError or TypeError naming their argument, before C"
ok $(grep -q '^closed: the context is closed' "$TMP/bout" && echo 0 || echo 1) \
  "a closed context raises PerfmodError; closing it again is harmless"
ok $(grep -qx 'alive True' "$TMP/bout" && echo 0 || echo 1) "the interpreter lives on and predicts"
[ $tap_failed -eq 0 ] || diag "$(cat "$TMP/bout")"
finish
