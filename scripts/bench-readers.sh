#!/bin/sh
# bench-readers.sh: how the readers scale: a traced op graph and a kernel table of 25k and
# 100k rows, each name distinct, loaded by perfmod; prints the times and their ratio (about
# 4 when loading is linear; a quadratic name pool made it 12).  Usage: scripts/bench-readers.sh
# [SMALL [LARGE]] (rows, default 25000 100000); PERFMOD_RUN names the perfmod to run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
run=${PERFMOD_RUN:-$top/run}
small=${1:-25000}
large=${2:-100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/perfmod-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# graph N FILE: an op graph of N nodes, each with a vector kernel of its own name
graph () {
  awk -v n="$1" 'BEGIN {
    print "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape"
    print "input_ids,misc,[],[],[],set(),set(),[],\"(8, 512)\""
    for (i = 1; i < n; i++)
      printf "n%d,VECop%d,\"[[\047VECop%d\047, [4096, 1024]]]\",[],[],set(),set(),\"[(4096, 1024)]\",\"(4096, 1024)\"\n", i, i, i
  }' >"$2"
}

# table N DIR: NeuSight's linear.csv, N rows, each kernel named apart
table () {
  mkdir -p "$2"
  awk -v n="$1" 'BEGIN {
    print "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K"
    for (i = 1; i <= n; i++)
      printf "linear,0.5,Tesla T4,ampere_sgemm_128x64_tn_%d,1,1,1,1,%d,128,%d\n", i, 64 + i % 1000, 32 + i % 77
  }' >"$2/linear.csv"
}

# seconds COMMAND...: wall-clock seconds of one run, output discarded
seconds () {
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

for n in "$small" "$large"; do
  graph "$n" "$tmp/g$n.csv"
  table "$n" "$tmp/k$n"
done
printf '%-28s %10s %10s %7s\n' reader "${small} s" "${large} s" ratio
for what in graph eval; do
  for n in "$small" "$large"; do
    if [ $what = graph ]; then
      s=$(seconds "$run" graph --opgraph "$tmp/g$n.csv" --format csv)
    else
      s=$(seconds "$run" eval --data "$tmp/k$n" --predictor roofline --format csv)
    fi
    eval "t$n=\$s"
  done
  eval "a=\$t$small b=\$t$large"
  label="op graph (perfmod graph)"
  [ $what = eval ] && label="kernel table (perfmod eval)"
  awk -v l="$label" -v a="$a" -v b="$b" 'BEGIN { printf "%-28s %10.3f %10.3f %7.2f\n", l, a, b, b / a }'
done
awk -v a="$small" -v b="$large" 'BEGIN { printf "(%g times the rows: a linear reader takes about %g times as long)\n", b / a, b / a }'
