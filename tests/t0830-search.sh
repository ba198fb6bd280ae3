#!/bin/sh
# t0830-search.sh: perfmod search: the enumeration counted by hand on a small space, every pruning reason, thread-count independence, the best rerun with --strategy, and bad input.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 28

tiny="$TMP/tiny.json"
# GPT-2 style, 4 layers, width 8, 4 heads, ffn 32
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 8, "n_head": 4, "n_inner": 32,\n "n_positions": 16, "vocab_size": 16}\n' > "$tiny"
T="search --model $tiny --gpus 4 --gpus-per-node 4 --global-batch 4 --seq 8"

# By hand, with mbs=1 and vp=1 fixed: (tp, pp, dp) = (1,1,4): 4 ZeRO stages x 3 recomputes = 12;
# (1,2,2): 12 less zero=3 with pp (3) = 9, twice (1F1B and GPipe) = 18; (1,4,1): 3 x 2 = 6;
# (2,1,2): 4 x 3 x 3 (sp=0; sp=1 with tpo=0 and 1: the run is bf16 on an H100, so kernels=te)
# = 36; (2,2,1): 6 x 3 = 18; (4,1,1): 3 x 3 = 9.  99 predicted, 6 pruned for zero=3 with
# pp > 1; --fix prunes mbs 2, 4, 8, 16 in each of the 6 (tp, pp) pairs (24) and vp=2 where
# pp=2 (2): 131 configurations.
run_pm $T --fix mbs=1,vp=1 --max-cp 1 --format json
ok $([ $rc -eq 0 ] && jq -e '.configurations == 131 and .predicted == 99 and .pruned.zero3_pp == 6 and
     .pruned.fixed == 26 and .pruned.memory == 0' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "a small space counted by hand: 131 configurations, 99 predicted, 6 + 26 pruned"
# without tpo: 21 fewer (sp=1 with tp > 1 once, not twice); tpo=1 fixed: the sp=1 ones alone
run_pm $T --fix mbs=1,vp=1,tpo=0 --max-cp 1 --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted == 78' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "--fix tpo=0: 78 predicted, as before tp communication overlap was searched"
run_pm $T --fix mbs=1,vp=1,tpo=1 --max-cp 1 --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted == 21 and ([.best[].strategy.spec | test("sp=1,.*tpo=1")] | all)' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "--fix tpo=1: the 21 with sp=1, each printed with tpo=1"
ok $(jq -e '[.best[].step_ms] | . == sort' "$TMP/out" >/dev/null && echo 0 || echo 1) "best first"
ok $(jq -e '.best | length == 10' "$TMP/out" >/dev/null && echo 0 || echo 1) "--top defaults to 10"

# every pruning reason
run_pm $T --format json
ok $(jq -e '.pruned.batch > 0 and .pruned.interleave > 0' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "a batch not a multiple of dp x mbs, layers not a multiple of pp x vp: pruned"
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 12, "n_head": 6, "n_inner": 48,\n "n_positions": 16, "vocab_size": 16}\n' > "$TMP/six.json"
run_pm search --model "$TMP/six.json" --gpus 8 --gpus-per-node 8 --global-batch 8 --seq 8 --format json
ok $([ $rc -eq 0 ] && jq -e '.pruned.tp > 0' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "6 heads: tp=4 and tp=8 pruned"
run_pm search --model mixtral-8x7b --gpu h100 --gpus 128 --global-batch 128 --seq 1024 --fix tp=8,pp=1,mbs=1 --format json
ok $([ $rc -eq 0 ] && jq -e '.pruned.ep > 0 and .best[0].strategy != null' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "Mixtral: ep=16 does not divide the 8 experts: pruned"
run_pm search --model gpt3-175b --gpu h100 --gpus 8 --global-batch 8 --seq 2048 --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted == 0 and .pruned.memory > 0 and .configurations == ([.pruned[]] | add) and (.best | length) == 0' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "GPT-3 175B on 8 GPUs: every configuration out of memory, pruned before its times, a result (exit 0)"
run_pm search --model gpt3-175b --gpu h100 --gpus 8 --global-batch 8 --seq 2048
ok $([ $rc -eq 0 ] && grep -q 'no configuration fits' "$TMP/out" && echo 0 || echo 1) "... said in the table"
run_pm $T --max-tp 1 --format json
ok $(jq -e '[.best[].strategy.spec | test("tp=1,")] | all' "$TMP/out" >/dev/null && echo 0 || echo 1) "--max-tp 1: tp=1 only"

# context parallelism: with everything else fixed, cp = 1, 2, 4 (8 tokens: 2 x cp chunks)
run_pm $T --fix tp=1,pp=1,mbs=1,vp=1,zero=0,recompute=none --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted == 3 and ([.best[].strategy.spec | capture("cp=(?<c>[0-9]+)").c] | sort) == ["1","2","4"]' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "cp enumerated: 1, 2 and 4 ranks over the 8-token sequence"
run_pm search --model "$tiny" --gpus 4 --gpus-per-node 4 --global-batch 4 --seq 6 \
  --fix tp=1,pp=1,mbs=1,vp=1,zero=0,recompute=none --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted == 1 and .pruned.cp == 2' "$TMP/out" >/dev/null && echo 0 || echo 1) \
  "6 tokens split into neither 4 nor 8 chunks: cp=2 and cp=4 pruned, cp=1 predicted"

# uneven layer splits: 6 layers over 4 stages, the two extra to the middle stages, under
# 1F1B and GPipe; rerun with its --strategy string, the same step
printf '{"model_type": "gpt2", "n_layer": 6, "n_embd": 8, "n_head": 4, "n_inner": 32,\n "n_positions": 16, "vocab_size": 16}\n' > "$TMP/six-layers.json"
run_pm search --model "$TMP/six-layers.json" --gpus 4 --gpus-per-node 4 --global-batch 4 --seq 8 \
  --fix tp=1,pp=4,mbs=1,vp=1,zero=0,recompute=none --max-cp 1 --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted == 2 and ([.best[].strategy.spec | capture("schedule=(?<s>[a-z0-9]+),.*,split=(?<p>[0-9:]+)$") | .s + " " + .p] | sort) == ["1f1b 1:2:2:1", "gpipe 1:2:2:1"]' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "6 layers over pp=4: split=1:2:2:1, 1F1B and GPipe"
# rerun_best WHAT: the search's best rerun with its --strategy string gives the same step
rerun_best () {
  s=$(jq -r '.best[0].strategy.spec' "$TMP/out") step=$(jq -r '.best[0].step_ms' "$TMP/out")
  run_pm --model "$TMP/six-layers.json" --mode train --batch 4 --seq 8 --gpus-per-node 4 --strategy "$s" --format json
  ok $([ $rc -eq 0 ] && jq -e --argjson s "$step" '((.predictions[0].step_ms / $s - 1) | fabs) < 1e-9' \
       "$TMP/out" >/dev/null && echo 0 || echo 1) "$1 rerun with --strategy $s: the same step"
}
rerun_best "the uneven split"

# with interleaving: 6 layers over pp=2 x vp=2 = 4 chunks, one each and the two extra to the
# middle chunks (split= per chunk in model order), rerun with its --strategy, the same step
run_pm search --model "$TMP/six-layers.json" --gpus 4 --gpus-per-node 4 --global-batch 4 --seq 8 \
  --fix tp=1,pp=2,mbs=1,vp=2,schedule=interleaved,zero=0,recompute=none --max-cp 1 --format json
ok $([ $rc -eq 0 ] && jq -e '.predicted >= 1 and ([.best[].strategy.spec | capture("vp=(?<v>[0-9]+),schedule=(?<s>[a-z]+),.*,split=(?<p>[0-9:]+)$") | .v + " " + .s + " " + .p] | unique) == ["2 interleaved 1:2:2:1"]' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "6 layers over pp=2 x vp=2 chunks: split=1:2:2:1 per chunk, interleaved"
rerun_best "the interleaved uneven split"

# the same answer on any number of threads
run_pm $T --format csv --top 20 --jobs 1
cp "$TMP/out" "$TMP/one.csv"
run_pm $T --format csv --top 20 --jobs 3
ok $([ "$(grep -c . "$TMP/one.csv")" -eq 21 ] && cmp -s "$TMP/one.csv" "$TMP/out" && echo 0 || echo 1) \
  "--jobs 1 and --jobs 3: the same best 20, in order"
run_pm search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --predictor tile-mlp --format csv --top 5 --jobs 1
cp "$TMP/out" "$TMP/one.csv"
run_pm search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --predictor tile-mlp --format csv --top 5 --jobs 2
ok $([ "$(grep -c . "$TMP/one.csv")" -eq 6 ] && cmp -s "$TMP/one.csv" "$TMP/out" && echo 0 || echo 1) \
  "tile-mlp on 1 and 2 threads: the same"

# the best, rerun with its --strategy string, gives the same step and memory
run_pm search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --format json --top 1
s=$(jq -r '.best[0].strategy.spec' "$TMP/out") step=$(jq -r '.best[0].step_ms' "$TMP/out") mem=$(jq -r '.best[0].memory_gib.total' "$TMP/out")
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 64 --seq 2048 --nodes 2 --strategy "$s" --format json
ok $([ $rc -eq 0 ] && jq -e --argjson s "$step" --argjson m "$mem" \
     '.predictions[0] | ((.step_ms / $s - 1) | fabs) < 1e-9 and ((.memory_gib.total / $m - 1) | fabs) < 1e-9' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "the best configuration rerun with --strategy $s: the same step and memory"
# a tpo=1 configuration (the best with tp=8 and tp communication overlap) rerun the same
run_pm search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --fix tp=8,tpo=1 --format json --top 1
s=$(jq -r '.best[0].strategy.spec' "$TMP/out") step=$(jq -r '.best[0].step_ms' "$TMP/out") mem=$(jq -r '.best[0].memory_gib.total' "$TMP/out")
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 64 --seq 2048 --nodes 2 --strategy "$s" --format json
ok $([ $rc -eq 0 ] && case "$s" in *tpo=1*) true;; *) false;; esac && jq -e --argjson s "$step" --argjson m "$mem" \
     '.strategy.tpo == true and (.predictions[0] | ((.step_ms / $s - 1) | fabs) < 1e-9 and ((.memory_gib.total / $m - 1) | fabs) < 1e-9)' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "a tpo=1 configuration rerun with --strategy $s: the same step and memory"

# gpt-oss-20b's layers alternate sliding and full attention: over pp=4 x vp=6 each chunk is
# one layer, and the search keys its chunks by their layers' kinds, not their places (a key
# that lost the kinds gives a faster step here); the CLI builds each chunk itself
run_pm search --model gpt-oss-20b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --fix pp=4 --format json --top 1
s=$(jq -r '.best[0].strategy.spec' "$TMP/out") step=$(jq -r '.best[0].step_ms' "$TMP/out") mem=$(jq -r '.best[0].memory_gib.total' "$TMP/out")
run_pm --model gpt-oss-20b --gpu h100 --mode train --batch 64 --seq 2048 --nodes 2 --strategy "$s" --format json
ok $([ $rc -eq 0 ] && case "$s" in *vp=[2-9]*) true;; *) false;; esac && jq -e --argjson s "$step" --argjson m "$mem" \
     '.predictions[0] | ((.step_ms / $s - 1) | fabs) < 1e-9 and ((.memory_gib.total / $m - 1) | fabs) < 1e-9' \
     "$TMP/out" >/dev/null && echo 0 || echo 1) "gpt-oss-20b's best interleaved layout rerun with --strategy $s: the same step and memory"

# bad input
expect_fail 2 "search needs --model, --gpus and --global-batch" "missing --gpus" -- search --model gpt3-2.7b --global-batch 8
expect_fail 2 "no configuration of tiny on 4 GPUs .* is left to predict" "impossible constraints (--fix tp=3): exit 2, said" -- \
  $T --fix tp=3
expect_fail 2 "--fix: tp=x: expected an integer from 1 to 1048576" "a bad --fix value" -- $T --fix tp=x
expect_fail 2 "--fix: split cannot be fixed" "--fix of a key search does not vary" -- $T --fix split=2:2
expect_fail 2 "--objective cost needs --price-per-gpu-hour" "cost without a price" -- $T --objective cost
expect_fail 2 "--gpus '0': expected an integer from 1" "--gpus 0" -- search --model gpt3-2.7b --gpus 0 --global-batch 8
finish
