#!/bin/sh
# t1030-limits.sh: bounded readers: a line, the bytes once decompressed and the records of one input each have a limit the environment can raise; NUL bytes and lone CRs read as what they are; a directory walk visits each folder and table once however many links reach it.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 14

# a kernel table of 40 GEMMs, as eval reads it
table () {  # table DIR [LINE-END]
  mkdir -p "$1/aiconfigurator/h100_sxm/gemm/a/1"
  awk -v e="${2:-\n}" 'BEGIN { ORS = e
    print "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency"
    for (i = 1; i <= 40; i++) printf "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,%d,4096,4096,%.6f" e, 16 * i, 0.004 + i * 0.001 }' \
    >"$1/aiconfigurator/h100_sxm/gemm/a/1/gemm_perf.csv"
}
rows () { awk -F, 'NR == 2 { print $6 }' "$TMP/out"; }

# Endless inputs end at once, in bounded memory (2 GB of address space; not under
# AddressSanitizer, whose shadow memory alone reserves terabytes of it)
if grep -q -- '-fsanitize=address' "$top_builddir/Makefile" 2>/dev/null; then vlimit=unlimited; else vlimit=2000000; fi
run_limited () { ( ulimit -v $vlimit 2>/dev/null; exec timeout 60 "$PERFMOD" "$@" ) >"$TMP/out" 2>"$TMP/err"; rc=$?; }
run_limited --opgraph /dev/zero
ok $([ "$rc" -eq 2 ] && grep -q '/dev/zero:1: a NUL byte' "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ]; echo $?) \
  "--opgraph /dev/zero: refused at its first byte, one line, exit 2"
run_limited --predictor linreg --plugin-opt linreg:params=/dev/zero
ok $([ "$rc" -eq 2 ] && grep -q "/dev/zero:1: not a perfmod parameter file" "$TMP/err"; echo $?) \
  "a parameter file of /dev/zero: refused, not read to its end"
{ echo 'perfmod-params 1'; head -c 3000000 /dev/zero | tr '\0' a; } >"$TMP/long.params"
run_limited --predictor linreg --plugin-opt linreg:params="$TMP/long.params"
ok $([ "$rc" -eq 2 ] && grep -q "long.params:2: a line longer than the limit, 1048576 bytes (PERFMOD_MAX_LINE" "$TMP/err"; echo $?) \
  "a parameter file's 3 MB line: refused with file:line and the limit"

# Each limit, lowered, is met with the file, the line and the variable
table "$TMP/t"
PERFMOD_MAX_LINE=50 run_pm eval --data "$TMP/t" --predictor roofline
ok $([ "$rc" -ne 0 ] && grep -q 'gemm_perf.csv:1: a record longer than the limit, 50 bytes (PERFMOD_MAX_LINE raises it)' "$TMP/err"; echo $?) \
  "PERFMOD_MAX_LINE=50: a longer record is refused naming file:line"
PERFMOD_MAX_ROWS=20 run_pm eval --data "$TMP/t" --predictor roofline
ok $([ "$rc" -ne 0 ] && grep -q 'gemm_perf.csv:21: more records than the limit, 20 (PERFMOD_MAX_ROWS' "$TMP/err"; echo $?) \
  "PERFMOD_MAX_ROWS=20: the 21st record is refused"
awk 'BEGIN { print "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency"
  for (i = 1; i <= 200000; i++) print "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,16,4096,4096,0.01" }' | gzip -9 \
  >"$TMP/bomb.gz"
mkdir -p "$TMP/b/aiconfigurator/h100_sxm/gemm/a/1"
cp "$TMP/bomb.gz" "$TMP/b/aiconfigurator/h100_sxm/gemm/a/1/gemm_perf.csv.gz"
PERFMOD_MAX_INPUT_BYTES=1000000 run_pm eval --data "$TMP/b" --predictor roofline
ok $([ "$rc" -ne 0 ] && grep -q 'gemm_perf.csv.gz:[0-9]*: more bytes (decompressed) than the limit, 1000000' "$TMP/err" &&
     [ "$(stat -c %s "$TMP/bomb.gz")" -lt 200000 ]; echo $?) \
  "PERFMOD_MAX_INPUT_BYTES: a small gzip that inflates past it is refused"
PERFMOD_MAX_ROWS=many run_pm --format csv
ok $([ "$rc" -eq 2 ] && grep -q "PERFMOD_MAX_ROWS='many': expected a positive integer" "$TMP/err" &&
     [ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -s "$TMP/out" ]; echo $?) "a limit that is no number: exit 2, one line"
PERFMOD_MAX_ROWS=0 run_pm --format csv
ok $([ "$rc" -eq 2 ] && grep -q "PERFMOD_MAX_ROWS='0'" "$TMP/err"; echo $?) "a limit of 0 is refused too"

# What the bytes are: CR-only lines are lines; a NUL is refused
run_pm eval --data "$TMP/t" --predictor roofline --format csv
lf=$(rows)
table "$TMP/cr" '\r'
run_pm eval --data "$TMP/cr" --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && [ "$lf" = 40 ] && [ "$(rows)" = 40 ]; echo $?) \
  "a table with CR-only line ends reads as its 40 rows (LF: ${lf:-none}, CR: $(rows))"
table "$TMP/crlf" '\r\n'
run_pm eval --data "$TMP/crlf" --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && [ "$(rows)" = 40 ]; echo $?) "CRLF line ends: the same 40 rows"
table "$TMP/nul"
printf 'A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,16\000,4096,4096,0.01\n' \
  >>"$TMP/nul/aiconfigurator/h100_sxm/gemm/a/1/gemm_perf.csv"
run_pm eval --data "$TMP/nul" --predictor roofline
ok $([ "$rc" -ne 0 ] && grep -q 'gemm_perf.csv:42: a NUL byte' "$TMP/err"; echo $?) \
  "a NUL inside a field is refused at its line, not cut short"

# Walks: links back up the tree end; a table reached twice counts once
mkdir -p "$TMP/loop"
for l in a b c; do ln -s . "$TMP/loop/$l"; done
table "$TMP/loop"
( exec timeout 30 "$PERFMOD" eval --data "$TMP/loop" --predictor roofline --format csv ) >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ "$rc" -eq 0 ] && [ "$(rows)" = 40 ]; echo $?) \
  "three links to . in a data folder: the walk ends at once, each table read once (rows $(rows))"
ln -s aiconfigurator "$TMP/t/again"
run_pm eval --data "$TMP/t" --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && [ "$(rows)" = 40 ]; echo $?) "a second link to the same tables: still 40 rows"
run_pm eval --data "$TMP/t/again" --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && [ "$(rows)" = 40 ]; echo $?) "--data through a link reads its tables"
finish
