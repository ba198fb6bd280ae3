#!/bin/sh
# t1260-published-collectives.sh: perfmod reproduce --table collectives: published nccl-tests bus bandwidths against the collectives a graph costs, by hand; bad rows named by file:line.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 9

hdr='id,gpu,ranks,gpus_per_node,nic_gbps,op,bytes,busbw_gbs,nccl,note,source'
# one H100 node's all-gather of 1 GiB published at 300 GB/s of bus bandwidth: its time is
# 7/8 GiB / 300 GB/s; the roofline's is 7/8 GiB over the 450 GB/s link (gpus.d), so -33.3 %
{ echo "# a comment"; echo "$hdr"; echo "ag,h100-sxm,8,8,,all_gather,1073741824,300,,,x"; } > "$TMP/one.csv"
run_pm reproduce --table collectives --published "$TMP/one.csv" --predictor roofline --format csv
link=$(gpu_key h100-sxm link_gbps)
ok $([ "$rc" -eq 0 ] && [ -n "$link" ] && awk -F, -v l="$link" 'NR == 2 { pub = 7 / 8 * 2^30 / 300e9 * 1e6
       good = $8 == "roofline" && ($10 / pub - 1)^2 < 1e-10 && ($11 / l - 1)^2 < 1e-10 &&
              ($13 + 100 / 3)^2 < 1e-4 } END { exit !good }' "$TMP/out"; echo $?) \
  "an all-gather's published time from its bus bandwidth, the roofline's at the link ($link GB/s: -33.3 %)"
ok $(grep -q '^roofline  *1 ' "$TMP/err" && grep -q '1 measurements from' "$TMP/err"; echo $?) \
  "the summary counts the one measurement (on stderr with --format csv)"

# across two nodes the row's network stands in for gpus.d's: a 2-node all-reduce of 8 GiB
# on 16 A100 with 6.25 GB/s a GPU: the roofline's tree bound is the buffer over the node's
# 8 x 6.25 GB/s, 21.5 ms less at 50 GB/s a GPU
printf '%s\n%s\n%s\n' "$hdr" "s,a100-sxm-80gb,16,8,6.25,all_reduce,8589934592,70,,,x" \
  "f,a100-sxm-80gb,16,8,50,all_reduce,8589934592,70,,,x" > "$TMP/net.csv"
run_pm reproduce --table collectives --published "$TMP/net.csv" --predictor roofline --format csv
ok $([ "$rc" -eq 0 ] && awk -F, 'NR == 2 { s = $12 } NR == 3 { f = $12 }
       END { want = 8 * 2^30 / 50e9 * 1e6; exit !((s / want - 1)^2 < 1e-10 && f < s / 2) }' "$TMP/out"; echo $?) \
  "a row's nic_gbps is its network: 8 GiB over 8 x 6.25 GB/s, faster at 50 GB/s a GPU"

# the shipped file: every row predicted by tile-mlp, within the domain and across it
run_pm reproduce --table collectives --predictor roofline,tile-mlp
n=$(grep -c '^tile-mlp  ' "$TMP/out")
med=$(awk '$1 == "tile-mlp" && NF == 6 { print $3 }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ "$n" -eq 1 ] && grep -Eq '^  across +[0-9]+ ' "$TMP/out" &&
     grep -q 'measurements from .*published-collectives.csv' "$TMP/out" &&
     awk -v m="$med" 'BEGIN { exit !(m > 0 && m <= 25) }'; echo $?) \
  "reproduce --table collectives reads the shipped measurements; tile-mlp within 25 % at the median ($med %)"

# bad rows: named by file:line (or the column), exit 2, nothing on stdout
bad () {  # bad NAME ROW PATTERN DESCRIPTION
  printf '%s\n%s\n' "$hdr" "$2" > "$TMP/$1.csv"
  expect_one_line 2 "$1\.csv:2: $3" "$4" -- reproduce --table collectives \
    --published "$TMP/$1.csv" --predictor roofline
}
bad op "b,h100-sxm,8,8,,broadcast,1024,10,,,x" "op 'broadcast': expected all_reduce" \
  "an unknown collective names file:line"
bad bw "b,h100-sxm,8,8,,all_reduce,1024,-3,,,x" "busbw_gbs '-3'" "a negative bus bandwidth refused"
bad nic "b,h100-sxm,16,8,fast,all_reduce,1024,10,,,x" "nic_gbps 'fast'" "a NIC that is not a number refused"
bad gpu "b,h999,8,8,,all_reduce,1024,10,,,x" "gpu 'h999' is in no gpus.d section" "an unknown GPU named"
printf 'id,gpu\n' > "$TMP/cols.csv"
expect_one_line 2 "cols\.csv:1: missing column 'ranks'" "a missing column named" -- \
  reproduce --table collectives --published "$TMP/cols.csv" --predictor roofline
finish
