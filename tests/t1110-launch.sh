#!/bin/sh
# t1110-launch.sh: --print megatron|nemo: a layout as Megatron-LM's arguments or Megatron-Bridge's overrides, by hand; every flag and field one its tool documents (tests/launch-names.txt); search prints its best; what neither runs, refused.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 14

NAMES="$top_srcdir/tests/launch-names.txt"
L70="--model llama3.1-70b --gpu h100 --mode train --batch 1024 --seq 8192"

# Llama-3.1-70B, tp=8 with sequence parallelism and its overlap, 4 stages of 5 chunks, 4
# replicas with the distributed optimizer (zero=1, the default under kernels=te) reducing
# during the backward, selective recomputation, bf16
run_pm $L70 --strategy tp=8,pp=4,vp=5,schedule=interleaved,dp=4,sp=1,tpo=1,recompute=selective \
  --print megatron
want="--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 5 --sequence-parallel --micro-batch-size 1 --global-batch-size 1024 --seq-length 8192 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --recompute-granularity selective --tp-comm-overlap --transformer-impl transformer_engine --bf16"
ok $([ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "$want" ]; echo $?) \
  "--print megatron: Llama-3.1-70B's layout as Megatron-LM's flags, by hand"
[ "$(cat "$TMP/out")" = "$want" ] || diag "got: $(cat "$TMP/out")"
run_pm $L70 --strategy tp=8,pp=4,vp=5,schedule=interleaved,dp=4,sp=1,tpo=1,recompute=selective \
  --print nemo
want="model.tensor_model_parallel_size=8 model.pipeline_model_parallel_size=4 model.virtual_pipeline_model_parallel_size=5 model.sequence_parallel=true train.micro_batch_size=1 train.global_batch_size=1024 dataset.sequence_length=8192 ddp.use_distributed_optimizer=true ddp.overlap_grad_reduce=true ddp.overlap_param_gather=true model.recompute_granularity=selective comm_overlap.tp_comm_overlap=true mixed_precision=bf16_mixed"
ok $([ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "$want" ]; echo $?) \
  "--print nemo: the same layout as Megatron-Bridge recipe overrides, by hand"

# DeepSeek-V3's 61 layers over 16 stages, the three dense ones first: Megatron-Core's
# pipeline layout (E the embedding, t*N layers, L the loss), DeepEP's dispatcher, fp8
run_pm --model deepseek-v3 --gpu h800 --mode train --batch 15360 --seq 4096 --precision fp8 \
  --strategy tp=1,pp=16,ep=64,dp=128,split=3:4:4:4:4:4:4:4:4:4:4:4:4:4:4:2,dispatcher=flex \
  --print megatron
ok $([ "$rc" -eq 0 ] && grep -q -- "--pipeline-model-parallel-layout 'Et\*3|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*4|t\*2L' --expert-model-parallel-size 64 " "$TMP/out" &&
     grep -q -- "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep .*--bf16 --fp8-format hybrid --fp8-recipe delayed$" "$TMP/out"; echo $?) \
  "--print megatron: an uneven split as the pipeline layout, DeepEP's dispatcher, fp8"

# fp8 is delayed scaling, fp8-cs per-tensor current scaling: each recipe's flag and
# Megatron-Bridge's precision recipe
recipe () {  # precision tool: the recipe's words
  run_pm $L70 --strategy tp=8,pp=2,dp=8 --precision "$1" --print "$2"
  tr ' ' '\n' <"$TMP/out" | grep -A1 -e '^--fp8-recipe$' -e '^mixed_precision=' | tr '\n' ' '
}
got="$(recipe fp8 megatron)|$(recipe fp8-cs megatron)|$(recipe fp8 nemo)|$(recipe fp8-cs nemo)"
ok $([ "$got" = "--fp8-recipe delayed |--fp8-recipe tensorwise |mixed_precision=bf16_with_fp8_mixed |mixed_precision=bf16_with_fp8_current_scaling_mixed " ]
     echo $?) "--print: fp8's recipe delayed, fp8-cs's tensorwise, in both tools ($got)"

# Every flag or field perfmod writes, over layouts that reach each of them, is one its tool
# documents
bad=0 n=0
for tool in megatron nemo; do
  for spec in "$L70 --strategy tp=8,pp=2,dp=8,zero=0" "$L70 --strategy tp=8,pp=2,dp=8,zero=2,recompute=full,grad_fp32=0" \
              "$L70 --strategy tp=8,pp=1,dp=16,zero=3 --precision amp-fp16" \
              "$L70 --strategy tp=4,pp=2,dp=8,cp=2,zero=1 --precision fp8" \
              "--model mixtral-8x7b --gpu h100 --mode train --batch 256 --seq 4096 --strategy tp=1,pp=4,vp=2,schedule=interleaved,ep=8,dp=8,dispatcher=flex,a2a_overlap=1" \
              "--model mixtral-8x7b --gpu h100 --mode train --batch 256 --seq 4096 --strategy tp=1,pp=4,ep=8,dp=8,dispatcher=allgather,split=9:8:8:7"; do
    # shellcheck disable=SC2086
    "$PERFMOD" $spec --print $tool >"$TMP/args" 2>"$TMP/err" || { bad=$((bad + 1)); diag "$spec: $(cat "$TMP/err")"; continue; }
    for w in $(tr ' ' '\n' <"$TMP/args" | sed -n 's/^\(--[a-z0-9-]*\)$/\1/p; s/^\([a-z_]*\.[a-z_.]*\)=.*/\1/p; s/^\(mixed_precision\)=.*/\1/p'); do
      n=$((n + 1))
      grep -qx "$tool $w" "$NAMES" || { bad=$((bad + 1)); diag "$tool: $w is not documented"; }
    done
  done
done
ok $([ "$bad" -eq 0 ] && [ "$n" -gt 130 ]; echo $?) \
  "every flag and field written ($n) is one Megatron-LM or Megatron-Bridge documents"

# search --print: the best layout's arguments, those of predict --print with its strategy
S="--model llama3.1-8b --gpu h100 --gpus 16 --global-batch 128 --seq 8192"
run_pm search $S --top 1 --format csv
best=$(awk -F'"' 'NR == 2 { print $2 }' "$TMP/out")
"$PERFMOD" --model llama3.1-8b --gpu h100 --mode train --batch 128 --seq 8192 --nodes 2 \
  --strategy "$best" --print megatron >"$TMP/want" 2>&1
run_pm search $S --print megatron
ok $([ "$rc" -eq 0 ] && [ -n "$best" ] && cmp -s "$TMP/out" "$TMP/want"; echo $?) \
  "search --print megatron: the best layout ($best), as predict --print gives it"

expect_one_line 2 "--print megatron: kernels=eager is PyTorch running Hugging Face's modules, not Megatron" \
  "--print with kernels=eager: refused, saying why" -- $L70 --strategy tp=8,pp=2,dp=8,kernels=eager --print megatron
expect_one_line 2 "--print nemo: Megatron runs 1F1B or interleaved 1F1B, not GPipe" \
  "--print with GPipe: refused, saying why" -- $L70 --strategy tp=8,pp=2,dp=8,schedule=gpipe --print nemo
expect_one_line 2 "--print megatron: a training step's arguments \(--mode train\)" \
  "--print for inference: refused" -- --model llama3.1-70b --gpu h100 --batch 8 --seq 1024 --strategy tp=8 --print megatron
expect_one_line 2 "--print megatron: a training layout's arguments \(--strategy with --mode train\)" \
  "--print without a strategy: refused" -- $L70 --print megatron
expect_one_line 2 "--print nemo: a training layout's arguments \(--strategy with --mode train, not --gen\)" \
  "--print with --gen: refused" -- --model llama3.1-8b --gpu h100 --batch 8 --seq 1024 --gen 16 --strategy tp=2 --print nemo
expect_one_line 2 "--print megatron: Megatron-Core needs sequence parallelism \(sp=1\) with tp > 1 and ep > 1" \
  "--print of tp and ep without sp: refused (Megatron-Core asserts it)" -- \
  --model mixtral-8x7b --gpu h100 --mode train --batch 64 --seq 4096 --strategy tp=2,ep=4,dp=4 --print megatron
# without --seq the search's own sequence (GPT-2 Large's 1024 positions), not 0
run_pm search --model gpt2-large --gpu h100 --gpus 8 --global-batch 64 --print megatron
ok $([ "$rc" -eq 0 ] && grep -q -- "--global-batch-size 64 --seq-length 1024 " "$TMP/out"; echo $?) \
  "search --print without --seq: the sequence the search used"
expect_one_line 2 "--print 'deepspeed': expected megatron or nemo" \
  "--print of an unknown tool: refused, naming both" -- $L70 --strategy tp=8,pp=2,dp=8 --print deepspeed
finish
