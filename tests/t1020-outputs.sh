#!/bin/sh
# t1020-outputs.sh: result files written without loss: through symlinks, atomically over regular files with their mode kept, directly to devices, FIFOs and stdout, never over one of the run's inputs, no file aside left behind.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 23

W="$TMP/w"
mkdir "$W"
svg () { head -c 64 "$1" 2>/dev/null | grep -q '<svg\|<?xml'; }

# a symlink is written through: the link stays, its target gets the picture
echo old >"$W/target.svg"
ln -s target.svg "$W/link.svg"
run_pm --plot "$W/link.svg"
ok $([ "$rc" -eq 0 ] && [ -L "$W/link.svg" ] && [ "$(readlink "$W/link.svg")" = target.svg ] &&
     svg "$W/target.svg"; echo $?) "--plot through a symlink writes its target and keeps the link"
ln -s new.svg "$W/dangling.svg"
run_pm --plot "$W/dangling.svg"
ok $([ "$rc" -eq 0 ] && [ -L "$W/dangling.svg" ] && svg "$W/new.svg"; echo $?) \
  "--plot through a dangling symlink creates its target"
mkdir "$W/sub"
ln -s ../target.svg "$W/sub/rel.svg"
echo old >"$W/target.svg"
run_pm --plot "$W/sub/rel.svg"
ok $([ "$rc" -eq 0 ] && [ -L "$W/sub/rel.svg" ] && svg "$W/target.svg" && [ ! -e "$W/sub/target.svg" ]; echo $?) \
  "a relative link is followed from its own directory"

# a regular file is replaced with its mode kept
echo old >"$W/mode.svg"
chmod 640 "$W/mode.svg"
run_pm --plot "$W/mode.svg"
ok $([ "$rc" -eq 0 ] && [ "$(stat -c %a "$W/mode.svg")" = 640 ] && svg "$W/mode.svg"; echo $?) \
  "--plot over a file keeps its mode (640)"

# a file of two hard links: both names see the new chart, still one file
echo old >"$W/hard1.svg"
ln "$W/hard1.svg" "$W/hard2.svg"
run_pm --plot "$W/hard1.svg"
ok $([ "$rc" -eq 0 ] && svg "$W/hard2.svg" && [ "$(stat -c %h "$W/hard1.svg")" = 2 ] &&
     [ "$(stat -c %i "$W/hard1.svg")" = "$(stat -c %i "$W/hard2.svg")" ]; echo $?) \
  "--plot over one of two hard links: the other name sees the chart, the link kept"

# a read-only file is not replaced for a normal user (as root: run as nobody, in a
# directory nobody may write, as a normal user would find it)
mkdir "$W/ro" && chmod 777 "$W/ro" && echo keep >"$W/ro/chart.svg" && chmod 444 "$W/ro/chart.svg"
if [ "$(id -u)" -eq 0 ]; then
  chmod 755 "$TMP" "$W"       # the way there open to nobody, as a user's own folders are
  as_user () { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
else
  as_user () { "$@"; }
fi
as_user "$PERFMOD" --plot "$W/ro/chart.svg" >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ "$rc" -ne 0 ] && grep -q "chart.svg: cannot write: Permission denied" "$TMP/err" &&
     [ "$(cat "$W/ro/chart.svg")" = keep ] && [ "$(ls "$W/ro")" = chart.svg ]; echo $?) \
  "--plot over a read-only file, as a normal user: refused, the file and its folder as they were"
chmod 644 "$W/ro/chart.svg" && chown 65534 "$W/ro/chart.svg" 2>/dev/null
as_user "$PERFMOD" --plot "$W/ro/chart.svg" >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ "$rc" -eq 0 ] && svg "$W/ro/chart.svg" && [ "$(stat -c %a "$W/ro/chart.svg")" = 644 ]; echo $?) \
  "--plot over the user's own writable file, as a normal user: replaced, mode 644 kept"

# anything but a regular file is written as it is.  As root the devices are
# nodes of our own (a broken perfmod then replaces those, not the system's).
if [ "$(id -u)" -eq 0 ] && mknod -m 666 "$W/null" c 1 3 2>/dev/null && mknod -m 666 "$W/full" c 1 7; then
  null="$W/null" full="$W/full"
else
  null=/dev/null full=/dev/full
fi
run_pm --plot "$null"
ok $([ "$rc" -eq 0 ] && grep -q '^e2e_ms  *[0-9]' "$TMP/out" && [ -c "$null" ] && [ -z "$(find "$(dirname "$null")" -maxdepth 1 -name "$(basename "$null").tmp*")" ]; echo $?) \
  "--plot $null writes to the device and leaves it a device"
if [ -c "$full" ] && [ -w "$full" ]; then
  run_pm --plot "$full"
  ok $([ "$rc" -ne 0 ] && grep -q "$full: cannot write" "$TMP/err" && [ -c "$full" ]; echo $?) \
    "--plot $full: the failed write is said, the device left as it is"
else
  ok 0 "--plot /dev/full # SKIP no writable /dev/full"
fi
mkfifo "$W/pipe.svg"
timeout 10 cat "$W/pipe.svg" >"$W/from-pipe" &
reader=$!
run_pm --plot "$W/pipe.svg"
wait $reader
ok $([ "$rc" -eq 0 ] && [ -p "$W/pipe.svg" ] && svg "$W/from-pipe"; echo $?) \
  "--plot to a FIFO writes into it and leaves it a FIFO"
run_pm --plot - --format csv
ok $([ "$rc" -eq 0 ] && grep -q '^<svg' "$TMP/out" && grep -q '^predictor\|ms' "$TMP/out" && [ ! -e ./-.tmp* ]; echo $?) \
  "--plot - writes the picture to stdout"

# refused: no name, a directory, a loop of links
expect_fail 1 "an empty file name to write" "--plot '' is refused" -- --plot ''
expect_fail 1 "$W: is a directory, not a file to write" "--plot DIR is refused naming it" -- --plot "$W"
ln -s loop2 "$W/loop1"
ln -s loop1 "$W/loop2"
expect_fail 1 "loop1: too many levels of symbolic links" "a loop of symlinks is refused" -- --plot "$W/loop1"

# never over an input: the same file by name, through a link, or a hard link
awk 'BEGIN { print "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape"
  print "input_ids,misc,[],[],[],set(),set(),[],\"(8, 512)\""
  print "n1,VECadd,\"[[\047VECadd\047, [8, 1024]]]\",[],[],set(),set(),\"[(8, 1024)]\",\"(8, 1024)\"" }' >"$W/graph.csv"
run_pm --opgraph "$W/graph.csv" --format csv
ok $([ "$rc" -eq 0 ] && grep -q '^tile-mlp,[0-9]' "$TMP/out"; echo $?) "the trace used below predicts"
cp "$W/graph.csv" "$W/graph.orig"
ln -s graph.csv "$W/graph-link.csv"
ln "$W/graph.csv" "$W/graph-hard.csv"
bad=0
for out in graph.csv graph-link.csv graph-hard.csv; do
  run_pm --opgraph "$W/graph.csv" --plot "$W/$out"
  { [ "$rc" -ne 0 ] && grep -q "one of this run's inputs" "$TMP/err" && cmp -s "$W/graph.csv" "$W/graph.orig"; } ||
    { bad=$((bad + 1)); diag "$out: exit $rc" "$(cat "$TMP/err")"; }
done
ok $([ "$bad" -eq 0 ]; echo $?) "an output that is the run's input (by name, symlink or hard link) is refused, the input unchanged"

# train: --out checked before any training
expect_one_line 2 "an empty file name to write" "train --out '' is refused before training" -- \
  train --predictor linreg --data "$W" --out ''
T="$W/tables/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$T"
awk 'BEGIN { print "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency"
  for (i = 1; i <= 40; i++) printf "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,%d,4096,4096,%.6f\n", 16 * i, 0.004 + i * 0.001 }' \
  | gzip >"$T/gemm_perf.csv.gz"
cp "$T/gemm_perf.csv.gz" "$W/table.orig"
run_pm train --predictor linreg --data "$W/tables" --out "$T/gemm_perf.csv.gz"
ok $([ "$rc" -eq 2 ] && grep -q "gemm_perf.csv.gz: is one of this run's inputs" "$TMP/err" &&
     [ "$(wc -l <"$TMP/err")" -eq 1 ] && cmp -s "$T/gemm_perf.csv.gz" "$W/table.orig"; echo $?) \
  "train --out over one of its training tables is refused before training, the table unchanged"
run_pm train --predictor linreg --data "$W/tables" --out "$W/lr.params"
ok $([ "$rc" -eq 0 ] && grep -q '^perfmod-params' "$W/lr.params"; echo $?) \
  "train --out elsewhere writes its parameters"

# interrupted long runs leave no chart and no file aside (SIGINT, SIGTERM); one killed
# outright leaves its file aside, which the next write of the name removes
wait_aside () {  # wait_aside FILE: until FILE.tmpPID is there (at most 20 s)
  i=0
  while [ $i -lt 200 ] && ! ls "$1".tmp* >/dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
  ls "$1".tmp* >/dev/null 2>&1
}
# (a background job of a script starts with SIGINT ignored: env gives it back its default)
for sig in INT TERM; do
  env --default-signal=INT "$PERFMOD" search --model gpt3-175b --gpu h100 --gpus 4096 --global-batch 2048 --predictor tile-mlp \
    --jobs 1 --plot "$W/s$sig.svg" >"$W/s$sig.out" 2>&1 &
  pid=$!
  wait_aside "$W/s$sig.svg"
  aside=$?
  kill -$sig $pid
  wait $pid
  rc=$?
  ok $([ $aside -eq 0 ] && [ $rc -gt 128 ] && [ ! -e "$W/s$sig.svg" ] && ! ls "$W/s$sig.svg".tmp* >/dev/null 2>&1; echo $?) \
    "search --plot interrupted by SIG$sig: no chart, no file aside (exit $rc)"
done
"$PERFMOD" search --serve --model qwen3-32b --gpu h100 --gpus 16 --isl 2048 --osl 256 --jobs 1 \
  --plot "$W/serve.svg" >/dev/null 2>&1 &
pid=$!
wait_aside "$W/serve.svg"
kill -KILL $pid
wait $pid
"$PERFMOD" search --serve --model qwen3-32b --gpu h100 --gpus 2 --isl 256 --osl 16 --plot "$W/serve.svg" >/dev/null 2>&1
rc=$?
ok $([ $rc -eq 0 ] && grep -q '<svg' "$W/serve.svg" && ! ls "$W/serve.svg".tmp* >/dev/null 2>&1; echo $?) \
  "search --serve killed outright: the next run's chart is written and the dead one's file aside removed"

# nothing left aside
left=$(find "$W" -maxdepth 3 -name '*.tmp[0-9]*' 2>/dev/null | head -3)
ok $([ -z "$left" ]; echo $?) "no file aside (NAME.tmpPID) left behind${left:+: $left}"
finish
