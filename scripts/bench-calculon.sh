#!/bin/sh
# bench-calculon.sh: the search speed of Calculon (github.com/calculon-ai/calculon), the peer perfmod search is compared with, on GPT-3 175B over 1,024 A100 80 GB at batch 1536.
#
# Usage: scripts/bench-calculon.sh CALCULON_DIR
#
# CALCULON_DIR is a checkout of calculon-ai/calculon. It needs python3 with
# numpy, psutil and pandas (Debian: python3-numpy python3-psutil python3-pandas).
# The full llm-all-executions space for this case has 11,698,528 executions.
# Calculon evaluates about 320 of them per second on one core, so the full
# space takes hours. By default this script therefore times Calculon's own
# evaluation loop, AllExecutions.search (Llm.compile + Llm.run for each
# execution, the same loop llm-all-executions runs in each worker), on a
# seeded uniform random sample of that space.
#
# Environment:
#   CALCULON_SAMPLE=N   executions to sample (default 20000)
#   CALCULON_PROCS=P    worker processes, like llm-all-executions -c (default 1)
#   CALCULON_SEED=S     sample seed (default 1)
#   CALCULON_FULL=1     run the real CLI over the whole space instead:
#                       bin/calculon llm-all-executions MODEL 1024 1536 float16
#                       SYSTEM OUT.csv -c P. N comes from its "Total executions"
#                       log line and S from its own "Calculation rate".
#   PYTHON=...          interpreter to use (default: first of python3,
#                       /usr/bin/python3 that can import Calculon)
#
# Output, one line on stdout:
#   calculon: N configurations in S s: R configurations/s (commit X)
# "(commit X)" is printed only for a git checkout. Details go to stderr.
# Exits 77 if CALCULON_DIR is missing or python can't import Calculon.

set -u

if [ $# -ne 1 ]; then
	echo "usage: $0 CALCULON_DIR" >&2
	exit 2
fi
dir=$1
if [ ! -d "$dir/calculon" ]; then
	echo "bench-calculon: skipped: no Calculon checkout at '$dir' (expected $dir/calculon/)" >&2
	exit 77
fi
dir=$(cd "$dir" && pwd)

py=
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
	[ -n "$cand" ] || continue
	if PYTHONPATH="$dir" "$cand" -c 'import calculon, calculon.llm' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -z "$py" ]; then
	echo "bench-calculon: skipped: python cannot import calculon from $dir (needs numpy, psutil, pandas)" >&2
	exit 77
fi

model=
for f in "$dir/models/gpt3-175B.json" "$dir/examples/models/gpt3-175B.json"; do
	if [ -f "$f" ]; then model=$f; break; fi
done
system=
if [ -f "$dir/systems/a100_80g.json" ]; then
	system=$dir/systems/a100_80g.json
else
	echo "bench-calculon: skipped: $dir/systems/a100_80g.json not found" >&2
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-calculon.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
if [ -z "$model" ]; then
	# GPT-3 175B (Brown et al. 2020), in Calculon's application format.
	model=$tmp/gpt3-175B.json
	printf '%s\n' '{"hidden": 12288, "feedforward": 49152, "seq_size": 2048,' \
		'"attn_heads": 96, "attn_size": 128, "num_blocks": 96}' >"$model"
fi

commit=
if command -v git >/dev/null 2>&1 && git -C "$dir" rev-parse --git-dir >/dev/null 2>&1; then
	commit=$(git -C "$dir" rev-parse HEAD 2>/dev/null)
fi

procs=${CALCULON_PROCS:-1}
sample=${CALCULON_SAMPLE:-20000}
seed=${CALCULON_SEED:-1}
echo "bench-calculon: $($py --version 2>&1), $procs process(es), model $model, system $system" >&2

if [ "${CALCULON_FULL:-0}" = 1 ]; then
	echo "bench-calculon: full space via the CLI; this takes hours" >&2
	log=$tmp/calculon.log
	PYTHONPATH="$dir" "$py" "$dir/bin/calculon" -l "$log" llm-all-executions \
		"$model" 1024 1536 float16 "$system" "$tmp/all.csv" -c "$procs" -n
	rc=$?
	cat "$log" >&2
	[ $rc -eq 0 ] || { echo "bench-calculon: calculon failed ($rc)" >&2; exit 1; }
	n=$(sed -n 's/^Total executions: //p' "$log")
	rate=$(sed -n 's/^Calculation rate: \([0-9.]*\) calcs\/sec$/\1/p' "$log")
	good=$(($(wc -l <"$tmp/all.csv") - 1))
	echo "bench-calculon: $good feasible rows in the CSV" >&2
	line=$(awk -v n="$n" -v r="$rate" 'BEGIN { printf "calculon: %d configurations in %.1f s: %.0f configurations/s", n, n / r, r }')
else
	load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
	out=$(PYTHONPATH="$dir" "$py" - "$model" "$system" "$sample" "$procs" "$seed" "$tmp/good.csv" <<'EOF'
import math, multiprocessing as mp, random, sys, time
import calculon
from calculon import System
from calculon.llm import Llm, AllExecutions

app_f, sys_f, n, procs, seed, csv = sys.argv[1:7]
n, procs, seed = int(n), int(procs), int(seed)
app = Llm.Application(calculon.io.read_json_file(app_f))
syst = System(calculon.io.read_json_file(sys_f))

def space():
  # Exactly the generator llm-all-executions enumerates (fused activation: true).
  return AllExecutions.all_executions(app, syst, 1024, 1536, 'float16', [True])

t0 = time.perf_counter()
total = sum(1 for _ in space())
n = min(n, total)
pick = set(random.Random(seed).sample(range(total), n))
exes = [e for i, e in enumerate(space()) if i in pick]
random.Random(seed).shuffle(exes)  # llm-all-executions shuffles too
t1 = time.perf_counter()

def timed_search(app, syst, exes):
  # Calculon's worker loop, plus the CPU time it used (for busy machines).
  c = time.process_time()
  good = AllExecutions.search(app, syst, exes)
  return good, time.process_time() - c

step = math.ceil(n / procs)
chunks = [(app, syst, exes[i:i + step]) for i in range(0, n, step)]
start = time.perf_counter()
if procs == 1:
  res = [timed_search(*chunks[0])]
else:
  with mp.Pool(procs) as pool:
    res = pool.starmap(timed_search, chunks)
secs = time.perf_counter() - start
goods = [g for g, _ in res]
cpu = sum(c for _, c in res)

with open(csv, 'w') as fd:
  fd.write(','.join(Llm.Execution.fields() + Llm.get_stats_fields()) + '\n')
  for g in goods:
    for vals in g:
      fd.write(','.join(str(v) for v in vals) + '\n')
print(total, n, f'{secs:.3f}', f'{t1 - t0:.1f}', f'{cpu:.3f}')
EOF
) || { echo "bench-calculon: calculon run failed" >&2; exit 1; }
	# shellcheck disable=SC2086 # split the five numbers
	set -- $out
	total=$1 n=$2 secs=$3 enum=$4 cpu=$5
	good=$(($(wc -l <"$tmp/good.csv") - 1))
	echo "bench-calculon: sampled $n of $total executions (seed $seed; enumeration ${enum} s not timed); $good feasible rows in the CSV" >&2
	awk -v n="$n" -v c="$cpu" 'BEGIN { printf "bench-calculon: worker CPU time %.1f s: %.0f configurations per CPU-second\n", c, n / c }' >&2
	echo "bench-calculon: load average before/after: $load0 / $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >&2
	line=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "calculon: %d configurations in %.1f s: %.0f configurations/s", n, s, n / s }')
fi

if [ -n "$commit" ]; then
	echo "$line (commit $commit)"
else
	echo "$line"
fi
