#!/bin/sh
# t0650-python.sh: the perfmod Python package over libperfmod gives the CLI's numbers as a dict, and perfmod's reason as an exception.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v python3 >/dev/null || skip_all "python3 not found"
[ -f "$top_builddir/python/perfmod/__init__.py" ] || skip_all "the Python package was not configured"
plan 3
export PYTHONPATH="$top_builddir/python" PERFMOD_LIBRARY="$top_builddir/.libs/libperfmod.so.0"
"$PERFMOD" --model gpt3-2.7b --gpu h100 --mode train --batch 64 --seq 2048 --strategy tp=2,dp=4 \
  --predictor tile-mlp --format json > "$TMP/cli" 2>/dev/null
env $(san_env) python3 - "$TMP/cli" > "$TMP/out" 2>&1 <<'PY'
import json, sys, perfmod
cli = json.load(open(sys.argv[1]))["predictions"][0]
r = perfmod.predict("gpt3-2.7b", gpu="h100", strategy="tp=2,dp=4", batch=64, seq=2048,
                    predictor="tile-mlp")
print("same" if abs(r["e2e_ms"] / cli["step_ms"] - 1) < 1e-9 and
      abs(r["memory_total_gb"] / cli["memory"]["total"] - 1) < 1e-9 and
      r["oom"] == cli["memory"]["oom"] else "differ %r %r" % (r, cli))
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
finish
