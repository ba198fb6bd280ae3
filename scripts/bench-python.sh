#!/bin/sh
# bench-python.sh: perfmod.search() from Python against perfmod search on the command line, the same search measured in the same run, as a ratio (issue 33: Python within 1.5x of the CLI).
# Usage: scripts/bench-python.sh [BUILDDIR]   (default: the build tree here); OpenBLAS's
# threads left as the machine sets them: the library runs its networks on one itself.
set -eu
B=$(cd "${1:-.}" && pwd)
S=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$B/python" PERFMOD_LIBRARY="$B/.libs/libperfmod.so.0"
export PERFMOD_DATADIR="$S" PERFMOD_PLUGIN_DIR="$B/plugins/.libs"
unset OPENBLAS_NUM_THREADS
python3 - "$B/perfmod" <<'PY'
import subprocess, sys, time, perfmod
args = dict(seq=2048, predictor="tile-mlp", top=5)
cli = [sys.argv[1], "search", "--model", "gpt3-175b", "--gpu", "a100", "--gpus", "1024",
       "--global-batch", "1536", "--seq", "2048", "--predictor", "tile-mlp", "--top", "5",
       "--format", "json"]
best = {"python": [], "cli": []}
for _ in range(3):                      # the best of three of each, interleaved
    t = time.perf_counter(); r = perfmod.search("gpt3-175b", "a100", 1024, 1536, **args)
    best["python"].append(time.perf_counter() - t)
    t = time.perf_counter(); subprocess.run(cli, check=True, capture_output=True)
    best["cli"].append(time.perf_counter() - t)
py, sh = min(best["python"]), min(best["cli"])
print("search of GPT-3 175B on 1,024 A100 (tile-mlp, %d configurations): Python %.2f s, "
      "CLI %.2f s (a process each)" % (r["configurations"], py, sh))
print("ratio: Python / CLI = %.2f (target <= 1.5)" % (py / sh))
PY
