#!/bin/sh
# t1000-hostile.sh: hostile and careless input to the readers (issue 23): large traces and kernel tables.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 2

# one_line STATUS PATTERN DESCRIPTION -- ARGS: as expect_fail, and stderr is one line.
one_line () {
  want=$1 pat=$2 what=$3
  shift 4
  run_pm "$@"
  if [ "$rc" -eq "$want" ] && grep -Eq -- "$pat" "$TMP/err" && [ ! -s "$TMP/out" ] &&
     [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
    ok 0 "$what"
  else
    ok 1 "$what"
    diag "exit $rc (want $want); stderr:" "$(cat "$TMP/err")" "stdout:" "$(head -5 "$TMP/out")"
  fi
}

# A data directory of our own: gpus.d, strategies.d and tiles.d copied, FILE added.
datadir () {
  rm -rf "$TMP/d"
  mkdir -p "$TMP/d"
  cp -r "$top_srcdir/gpus.d" "$top_srcdir/strategies.d" "$top_srcdir/tiles.d" "$top_srcdir/models" "$TMP/d/"
}

# --- Scale: 200,000 nodes, each kernel with a name of its own (a linear
# name pool took minutes); the timing is scripts/bench-readers.sh's.
N=200000
awk -v n=$N 'BEGIN {
  print "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape"
  print "input_ids,misc,[],[],[],set(),set(),[],\"(8, 512)\""
  for (i = 1; i < n; i++)
    printf "n%d,VECop%d,\"[[\047VECop%d\047, [%d, 1024]]]\",[],[],set(),set(),\"[(8, 1024)]\",\"(8, 1024)\"\n", i, i, i, i % 7 + 1
}' >"$TMP/big.csv"
run_pm graph --opgraph "$TMP/big.csv" --format csv
ok $([ $rc -eq 0 ] && awk -F, -v n=$N 'NR > 1 { rows++; if ($7 != "op" substr($1, 2)) bad++; b += $8 }
       END { exit !(rows == n - 1 && !bad && b == 4 * (n - 1) - 3) }' "$TMP/out" && echo 0 || echo 1) \
  "a traced graph of 200,000 nodes loads: every node, its own kernel name, its batch"
mkdir -p "$TMP/k"
awk 'BEGIN { print "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K"
  for (i = 1; i <= 100000; i++)
    printf "linear,0.5,Tesla T4,ampere_sgemm_128x64_tn_%d,1,1,1,1,%d,128,64\n", i, 64 + i % 1000 }' >"$TMP/k/linear.csv"
run_pm eval --data "$TMP/k" --predictor roofline --format csv --neusight "$TMP/none"
ok $([ $rc -eq 0 ] && grep -q '^roofline,FC,in,100000,' "$TMP/out" && echo 0 || echo 1) \
  "a kernel table of 100,000 rows, each kernel named apart, is evaluated whole"

finish
