#!/bin/sh
# t0840-search-mpi.sh: perfmod search split over MPI ranks (mpirun -np 2) gives the single process's answer.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
grep -q '^#define HAVE_MPI 1' "$top_builddir/config.h" 2>/dev/null ||
  skip_all "perfmod was built without Open MPI (configure found no ompi-c)"
command -v mpirun >/dev/null || skip_all "mpirun not found (Debian: openmpi-bin)"
plan 5

# Open MPI's own allocations are not perfmod's leaks
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
S="search --model gpt3-2.7b --gpu h100 --gpus 64 --global-batch 256 --seq 2048 --top 15 --jobs 1"
run_pm $S --format json
cp "$TMP/out" "$TMP/one.json"
mpirun --allow-run-as-root --oversubscribe -np 2 "$PERFMOD" $S --format json >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 0 ] && jq -e --slurpfile one "$TMP/one.json" \
     '.best == $one[0].best and .predicted == $one[0].predicted and .pruned == $one[0].pruned and
      .configurations == $one[0].configurations' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "mpirun -np 2: the same best 15, counts and pruning as one process"
ok $([ "$(grep -c '"best"' "$TMP/out")" -eq 1 ] && echo 0 || echo 1) "one report, from rank 0"
mpirun --allow-run-as-root --oversubscribe -np 2 "$PERFMOD" search --model gpt3-2.7b --gpus 4 \
  --global-batch 4 --fix tp=3 >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ $rc -ne 0 ] && grep -q 'is left to predict' "$TMP/err" && [ ! -s "$TMP/out" ] && echo 0 || echo 1) \
  "impossible constraints under mpirun: a failure, said"
# --plot: every rank searches each GPU count, rank 0 draws the single process's chart
P="search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --fix mbs=1 --max-cp 1 --top 3 --jobs 1"
run_pm $P --plot "$TMP/one.svg"
mpirun --allow-run-as-root --oversubscribe -np 2 "$PERFMOD" $P --plot "$TMP/two.svg" >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 0 ] && [ -s "$TMP/one.svg" ] && cmp -s "$TMP/one.svg" "$TMP/two.svg" && echo 0 || echo 1) \
  "mpirun -np 2 search --plot: the single process's chart"
# a rank killed outright: the other rank ends with a failure, not a hang, and no chart is
# left.  (Open MPI's mpirun itself now and then never reaps a rank killed under load: it is
# given a timeout with a KILL after it, and what is checked is that perfmod's ranks end.)
K="search --model gpt3-175b --gpu h100 --gpus 4096 --global-batch 2048 --predictor tile-mlp --jobs 1"
( timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$PERFMOD" $K --plot "$TMP/killed.svg" \
    >"$TMP/kout" 2>"$TMP/kerr"; echo $? >"$TMP/krc" ) &
i=0
ranks () { pgrep -f -- "^$PERFMOD $K --plot $TMP/killed.svg"; }   # the ranks, not mpirun
while [ $i -lt 200 ] && [ "$(ranks | grep -c .)" -lt 2 ]; do sleep 0.1; i=$((i + 1)); done
rank=$(ranks | tail -1)
[ -n "$rank" ] && kill -KILL "$rank"
# the ranks still running (a killed one not yet reaped is a zombie: not counted)
alive () { for r in $(ranks); do [ "$(ps -o stat= -p "$r" 2>/dev/null | cut -c1)" = Z ] || echo "$r"; done; }
i=0
while [ $i -lt 600 ] && [ -n "$(alive)" ]; do sleep 0.1; i=$((i + 1)); done
left=$(alive)
# mpirun's own end: 10 s after its ranks', else it is the hang above and is ended here
i=0
while [ $i -lt 100 ] && [ ! -s "$TMP/krc" ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$TMP/krc" ] || pkill -KILL -f -- "^mpirun .*$TMP/killed.svg" 2>/dev/null
wait
krc=$(cat "$TMP/krc" 2>/dev/null)
ok $([ -n "$rank" ] && [ -z "$left" ] && [ -n "$krc" ] && [ "$krc" -ne 0 ] && [ ! -e "$TMP/killed.svg" ] &&
     ! grep -q '"best"\|^rank' "$TMP/kout"; echo $?) \
  "mpirun with one rank killed: every rank ends within 60 s (mpirun exit ${krc:-none}), no chart"
finish
