#!/bin/sh
# t0900-parallel.sh: graph-level parallelism: sharded kernels and inserted collectives, pipeline, ZeRO memory, refusals, and the distributed table.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 48

tiny="$TMP/tiny.json"
# L=4, d=8, 4 heads, f=32, v=16
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 8, "n_head": 4, "n_inner": 32,\n "n_positions": 16, "vocab_size": 16}\n' > "$tiny"

# --- tensor parallelism: the shards and the all-reduces ---
run_pm graph --model "$tiny" --batch 1 --seq 4 --mode train --format csv --strategy kernels=eager --attention unfused
cp "$TMP/out" "$TMP/one.csv"
run_pm graph --model "$tiny" --batch 1 --seq 4 --mode train --format csv --strategy tp=2,kernels=eager --attention unfused
cp "$TMP/out" "$TMP/tp2.csv"
# c_attn (4, 8, 24) becomes (4, 8, 12); c_fc (4, 8, 32) -> (4, 8, 16); c_proj's reduced dim halves
# columns: node,op,layer,count,phase,class,kernel,b,m,n,k,h,flops,bytes,...
ok $(awk -F, '$1=="h_0_attn_c_attn"&&$5=="fw"{k=$11} $1=="h_0_mlp_c_fc"&&$5=="fw"{f=$11}
     $1=="h_0_mlp_c_proj"&&$5=="fw"{n=$10} END{print (k==12&&f==16&&n==16)?0:1}' "$TMP/tp2.csv") \
  "tp=2: column-parallel GEMMs keep half the outputs, row-parallel ones half the reduced width"
ok $(awk -F, '$1=="h_0_scores"&&$5=="fw"{print ($8==2)?0:1}' "$TMP/tp2.csv") \
  "tp=2: attention runs 2 of the 4 heads"
ok $(awk -F, '$1=="lm_head"&&$5=="fw"{print ($11==8)?0:1}' "$TMP/tp2.csv") \
  "tp=2: the output layer keeps half the vocabulary"
# per layer: all-reduce after attention and MLP (fw), of their input gradients (bw); plus
# embedding (fw), output layer (bw) and the cross-entropy's (fw)
ok $(awk -F, '$6=="COMM"&&$7=="allreduce"{n[$5]+=$4; if ($3>=0) l[$5]+=1}
     END{print (n["fw"]==4*2+2&&n["bw"]==4*2+1&&l["fw"]==2&&l["bw"]==2)?0:1}' "$TMP/tp2.csv") \
  "tp=2: two all-reduces per layer each way, and the embedding's, output layer's and loss's"
# (bf16 activations: the H100's default precision)
ok $(awk -F, '$6=="COMM"&&$1=="h_0_tp_allreduce_fw"{print ($14==4*8*2)?0:1; exit}' "$TMP/tp2.csv") \
  "tp=2: an all-reduce moves one micro-batch's hidden state (4 tokens x 8 x 2 bytes)"
ok $(awk -F, '$1=="h_0_ln_1"&&$5=="fw"{print ($8==4)?0:1}' "$TMP/tp2.csv") \
  "tp=2 without sequence parallelism: the norms see every token"
run_pm graph --model "$tiny" --batch 1 --seq 4 --mode train --format csv --strategy tp=2,sp=1,kernels=eager --attention unfused
ok $(awk -F, '$1=="h_0_ln_1"&&$5=="fw"{ln=$8} $6=="COMM"&&$3==0{n[$7]++}
     END{print (ln==2&&n["allgather"]==6&&n["reduce_scatter"]==4&&n["allreduce"]==0)?0:1}' "$TMP/out") \
  "sp=1: norms on half the tokens; per layer 6 all-gathers (2 re-gathered for the weight gradients) and 4 reduce-scatters replace the all-reduces"

# --- expert parallelism on a small Mixtral ---
mix="$TMP/mix.json"
printf '{"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 4,\n "num_key_value_heads": 2, "intermediate_size": 32, "vocab_size": 32, "num_local_experts": 4,\n "num_experts_per_tok": 2, "max_position_embeddings": 64}\n' > "$mix"
run_pm graph --model "$mix" --batch 2 --seq 8 --mode train --format csv --strategy ep=2,dp=2,kernels=eager --gpus-per-node 8 --attention unfused
ok $(awk -F, '$1=="layers_0_experts_gate_proj"&&$5=="fw"{n++; c=$4; m=$9}
     $6=="COMM"&&$7=="alltoall"{a[$5]++} END{print (n==1&&c==4&&m==8&&a["fw"]==2&&a["bw"]==2)?0:1}' "$TMP/out") \
  "ep=2: 2 of 4 experts per rank (one built, counted 2 x 2 layers), each on 8 x 2 x 2 / 4 = 8 tokens; all-to-all dispatch and combine each way"
run_pm graph --model "$mix" --batch 2 --seq 8 --mode train --format csv --strategy ep=2,dp=2,kernels=eager --gpus-per-node 8 --plugin-opt ep:imbalance=1.5 --attention unfused
ok $(awk -F, '$1=="layers_0_experts_gate_proj"&&$5=="fw"{n++; r=($9==12)?0:1} END{print (n==1)?r:1}' "$TMP/out") \
  "ep:imbalance=1.5: the busiest rank's experts get 1.5 x the tokens"

# --- predictions under a strategy ---
run_pm --model gpt2-large --gpu h100 --mode train --batch 8 --strategy tp=1,kernels=eager --format csv --attention unfused
one=$(awk -F, 'NR==2{print $3}' "$TMP/out")
run_pm --model gpt2-large --gpu h100 --mode train --batch 8 --strategy dp=4,kernels=eager --format csv --attention unfused
ok $(awk -F, -v one="$one" 'NR==2{print ($3<one/3&&$10>0&&$5==$10)?0:1}' "$TMP/out") \
  "dp=4: a quarter of the micro-batches plus an exposed gradient all-reduce"
run_pm --model gpt2-large --gpu h100 --mode train --batch 8 --strategy dp=4,kernels=eager --format csv --plugin-opt dp:overlap=1 --attention unfused
ok $(awk -F, 'NR==2{print ($5<$10&&$11>0)?0:1}' "$TMP/out") \
  "dp:overlap=1: the gradient buckets hide behind the backward pass"
run_pm --model gpt2-large --gpu h100 --mode train --batch 8 --strategy pp=4,mbs=1,kernels=eager --format csv --attention unfused
# the last stage also runs the 50257-wide output layer and loss: more than (p-1)/(m+p-1) = 0.27
ok $(awk -F, 'NR==2{b=$4; print (b>0.27&&b<0.5&&$9>0)?0:1}' "$TMP/out") \
  "pp=4 with 8 micro-batches: a bubble above the uniform (p-1)/(m+p-1), from the uneven last stage"
bubble=$(awk -F, 'NR==2{print $4}' "$TMP/out")
run_pm --model gpt2-large --gpu h100 --mode train --batch 8 --strategy pp=4,mbs=1,schedule=interleaved,vp=3,kernels=eager --format csv --attention unfused
ok $(awk -F, -v b="$bubble" 'NR==2{print ($4<b*0.8)?0:1}' "$TMP/out") \
  "interleaved 1F1B with 3 virtual stages shrinks the bubble"

# --- ZeRO: what each stage shards ---
for z in 0 1 2 3; do
  run_pm --model gpt2-large --gpu h100 --mode train --dtype bf16 --batch 8 --strategy dp=8,zero=$z,kernels=eager --format json --attention unfused
  jq -r '.predictions[0].memory_gib | "\(.weights) \(.gradients) \(.optimizer)"' "$TMP/out" > "$TMP/z$z"
done
ok $(set -- $(cat "$TMP/z0") $(cat "$TMP/z1"); awk -v o0="$3" -v o1="$6" -v g0="$2" -v g1="$5" \
     'BEGIN{d=o1*8-o0; print (d<1e-6&&d>-1e-6&&g1==g0)?0:1}') "zero=1: the optimizer state over 8"
ok $(set -- $(cat "$TMP/z0") $(cat "$TMP/z2"); awk -v g0="$2" -v g2="$5" -v w0="$1" -v w2="$4" \
     'BEGIN{print (g2<g0/8+1e-6&&w2==w0)?0:1}') "zero=2: the gradients over 8 (and no bucket copy)"
ok $(set -- $(cat "$TMP/z0") $(cat "$TMP/z3"); awk -v w0="$1" -v w3="$4" \
     'BEGIN{d=w3*8-w0; print (d<1e-6&&d>-1e-6)?0:1}') "zero=3: the weights over 8"
run_pm --model gpt2-large --gpu h100 --mode train --dtype bf16 --batch 8 --strategy dp=8,zero=3,kernels=eager --format csv --attention unfused
ok $(awk -F, 'NR==2{print ($10>0)?0:1}' "$TMP/out") "zero=3: parameter all-gathers and gradient reduce-scatters"

# --- refusals: degrees the model or the cluster cannot take ---
expect_fail 2 'tp=3 does not divide the 20 attention heads' "tp that does not divide the heads" -- \
  --model gpt2-large --mode train --strategy tp=3 --gpus-per-node 3
expect_fail 2 'pp=5 does not divide the 36 layers: give each stage its layers, split=7:8:7:7:7 for one' \
  "pp that does not divide the layers: refused with the split search tries (36 = 4 x 7 + 8, the extra layer to the second stage)" -- \
  --model gpt2-large --mode train --batch 5 --strategy pp=5
run_pm --model gpt2-large --mode train --batch 5 --strategy pp=5,split=7:8:7:7:7
ok $([ "$rc" -eq 0 ] && grep -q '^strategy: .*pp=5' "$TMP/out"; echo $?) "the split the refusal offers is taken"
expect_fail 2 'ep=3 does not divide the 8 experts' "ep that does not divide the experts" -- \
  --model mixtral-8x7b --mode train --batch 3 --strategy ep=3,dp=3
expect_fail 2 'the model has no experts' "ep on a dense model" -- \
  --model gpt2-large --mode train --batch 2 --strategy ep=2,dp=2
expect_fail 2 'tp=4 x pp=4 = 16 does not divide the 8 GPUs' "more GPUs than the cluster has" -- \
  --model gpt2-large --mode train --strategy tp=4,pp=4 --nodes 1 --gpus-per-node 8

# --- a given split of the layers over the stages ---
step () {  # step SPLIT: step_ms and bubble of GPT-2 Large over two stages
  # fp32, where the output layer and loss outweigh a layer (in bf16 its GEMMs are cheap)
  run_pm --model gpt2-large --gpu h100 --mode train --precision fp32 --batch 8 --strategy "pp=2,mbs=1$1" \
    --predictor roofline
  awk '/^step_ms/ { s = $2 } /^bubble / { b = $2 } END { print s, b }' "$TMP/out"
}
even=$(step "")
ok $([ -n "$even" ] && [ "$(step ,split=18:18)" = "$even" ] && echo 0 || echo 1) \
  "split=18:18 is the even split"
light=$(step ,split=19:17)
ok $(grep -q ' split=19:17: ' "$TMP/out" &&
     echo "$even $light" | awk '{ exit !($3 < $1 && $4 < $2) }'; echo $?) \
  "split=19:17: a layer off the stage with the output layer shortens the step and the bubble"
run_pm --model gpt2-large --gpu h100 --mode train --batch 8 --strategy pp=2,mbs=1,split=30:6 --predictor roofline
# bf16 weights, 2 bytes a parameter: 30 x (12 h^2 + 13 h) + the embeddings (50257 + 1024) h
w=$(awk 'BEGIN { h = 1280; printf "%.2f", 2 * (30 * (12 * h * h + 13 * h) + (50257 + 1024) * h) / 1073741824 }')
ok $(grep -Eq "^memory per device \(GiB, pipeline rank 0, the fullest\): weights $w," "$TMP/out"; echo $?) \
  "split=30:6: the first rank holds 30 layers' weights ($w GiB in bf16, against 0.78 even)"
expect_fail 2 "split gives 20 layers, the model has 36" "a split that does not add up to the layers" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=2,split=10:10
expect_fail 2 "split gives 3 stages, pp=2" "a split of another number of stages" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=2,split=12:12:12
expect_fail 2 "split=0:36: '0' is not a positive number of layers" "a stage of no layers" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=2,split=0:36
expect_fail 2 "stage 0's 19 layers do not divide over vp=2 chunks" \
  "a split per stage with virtual stages: each stage's layers split evenly over its chunks" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=2,vp=2,schedule=interleaved,split=19:17
expect_fail 2 "split gives 3 numbers: one per stage \\(pp=2\\) or one per chunk \\(pp x vp = 4\\)" \
  "a split of neither pp nor pp x vp numbers" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=2,vp=2,schedule=interleaved,split=12:12:12

# --- uneven splits with interleaving (Megatron-Core's layouts) ---
# stages STRATEGY: rank 0's and rank 1's forward ms of GPT-2 large's step on 2 stages x 2 chunks
stages () {
  run_pm --model gpt2-large --mode train --batch 8 --predictor roofline --format json \
    --strategy "pp=2,vp=2,schedule=interleaved,$1"
  jq -r '[.predictions[0].stages[].fw_ms] | map(tostring) | join(" ")' "$TMP/out"
}
# one number per chunk in model order: chunk 0 (rank 0) 10 layers, chunk 1 (rank 1) 8, then 9
# and 9: rank 0 holds one layer more than the even split, rank 1 one fewer
even=$(stages split=9:9:9:9) uneven=$(stages split=10:8:9:9)
ok $(echo "$even $uneven" | awk '{ d0 = $3 - $1; d1 = $4 - $2
       exit !(NF == 4 && d0 > 0 && d1 < 0 && ((d0 + d1) / d0)^2 < 1e-12) }'; echo $?) \
  "split per chunk with vp=2: rank 0 gains the layer rank 1 loses ($even -> $uneven)"
# first_layers/last_layers: stages of 3, 12, 12 and 9 layers over pp=4 (vp=1), the same step as
# the split spelled out; with vp=3 each stage's layers over its 3 chunks, as the split of chunks
# step STRATEGY [MODEL BATCH]: the step's ms (default GPT-2 large, batch 12)
step () {
  run_pm --model "${2:-gpt2-large}" --mode train --batch "${3:-12}" --predictor roofline \
    --format json --strategy "$1"
  jq -r '.predictions[0].step_ms' "$TMP/out"
}
a=$(step pp=4,first_layers=3,last_layers=9) b=$(step pp=4,split=3:12:12:9)
c=$(step pp=4,vp=3,schedule=interleaved,first_layers=3,last_layers=9)
d=$(step pp=4,vp=3,schedule=interleaved,split=1:4:4:3:1:4:4:3:1:4:4:3)
ok $([ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$c" ] && [ "$c" = "$d" ]; echo $?) \
  "first_layers=3,last_layers=9: the stages' layers as the split gives them, with and without vp ($a = $b, $c = $d)"
# account_embed/account_loss: Qwen3-235B's 94 layers and the two count 96 over 4 x 2 chunks:
# 12 each, the first and last chunks 11
e=$(step pp=4,vp=2,schedule=interleaved,ep=8,dp=8,account_embed=1,account_loss=1 qwen3-235b-a22b 32)
f=$(step pp=4,vp=2,schedule=interleaved,ep=8,dp=8,split=11:12:12:12:12:12:12:11 qwen3-235b-a22b 32)
ok $([ -n "$e" ] && [ "$e" = "$f" ]; echo $?) \
  "account_embed=1,account_loss=1: Qwen3-235B's 94 layers as 11:12x6:11 over pp=4 x vp=2 ($e = $f)"
expect_fail 2 "first_layers/last_layers with account_embed/account_loss" \
  "first_layers with account_embed refused, as Megatron does" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=4,first_layers=3,account_embed=1
expect_fail 2 "first_layers=5, last_layers=6: the other 25 layers do not split evenly over the 2 middle stages" \
  "first_layers/last_layers whose middle does not divide" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=4,first_layers=5,last_layers=6
expect_fail 2 "account_embed/account_loss: 36 layers \\+ the embedding do not split evenly over pp x vp = 4" \
  "account_embed whose layers do not divide" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=4,account_embed=1
expect_fail 2 "account_embed=2: expected 0 or 1" "account_embed takes 0 or 1" -- \
  --model gpt2-large --mode train --batch 8 --strategy pp=4,account_embed=2

# --- Megatron-LM's kernels ---
run_pm graph --model "$tiny" --batch 1 --seq 4 --mode train --format csv --strategy kernels=megatron
cp "$TMP/out" "$TMP/meg.csv"
ok $(awk -F, '$3==0{n[$1]++} END{print (("h_0_bias_gelu" in n) && ("h_0_bias_dropout_add_2" in n) &&
     !("h_0_scale" in n) && !("h_0_gelu_pow" in n) && !("h_0_mask_slice" in n))?0:1}' "$TMP/meg.csv") \
  "kernels=megatron: fused bias-GeLU and bias-dropout-add, the scale inside the scores' GEMM, one masked_fill"
ok $(awk -F, 'FNR==1{f++} $3==0{k[f]+=1} $6=="FC"||$6=="BMM"{fl[f]+=$4*$13}
     END{print (k[2]<k[1]&&fl[1]==fl[2])?0:1}' "$TMP/one.csv" "$TMP/meg.csv") \
  "kernels=megatron: fewer kernels per layer than the eager layer, the same matrix FLOPs"
run_pm --model gpt2-large --gpu h100 --mode train --batch 4 --strategy dp=4,kernels=eager --attention unfused --predictor roofline
grep '^step_ms' "$TMP/out" >"$TMP/eager"
run_pm --model gpt2-large --gpu h100 --mode train --batch 4 --strategy dp=4,kernels=megatron --attention unfused --predictor roofline
ok $(grep -q 'kernels=megatron:' "$TMP/out" &&
     awk 'NR==FNR{e=$2; next} /^step_ms/{print ($2<e)?0:1}' "$TMP/eager" "$TMP/out") \
  "kernels=megatron: said in the strategy line; under roofline the step is shorter (fewer memory passes)"
expect_fail 2 "--strategy: kernels=fused: expected eager, megatron or te" "an unknown kernels value is refused" -- \
  --model gpt2-large --mode train --strategy kernels=fused
expect_fail 2 "kernels=megatron: Megatron-LM's GPT layer is modelled for the GPT-2/GPT-3 family only" \
  "kernels=megatron on another family is refused" -- --model bert-large --mode train --strategy kernels=megatron
ok $([ "$(grep -c 'kernels=megatron' "$TMP/err")" -eq 1 ] && echo 0 || echo 1) \
  "a refused strategy is reported once"
expect_fail 2 "--fusion with kernels=megatron: Megatron's layer has its own fusions" \
  "--fusion with kernels=megatron is refused as bad input" -- --model gpt2-large --mode inf --fusion --strategy kernels=megatron
printf 'Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape\nx,misc,[],[],[],set(),set(),[],"(4, 8)"\n' >"$TMP/trace.csv"
expect_fail 2 "kernels=megatron: an imported graph runs the kernels it traced" \
  "kernels=megatron with an imported trace is refused" -- --opgraph "$TMP/trace.csv" --strategy kernels=megatron

# --- the paper's distributed table ---
if [ -f "${PERFMOD_NEUSIGHT:-$top_srcdir/../shared/neusight}/summary/distributed.csv" ]; then
  NEUSIGHT=${PERFMOD_NEUSIGHT:-$top_srcdir/../shared/neusight}
  run_pm reproduce --neusight "$NEUSIGHT" --table distributed --predictor roofline --format csv
  ok $(awk -F, 'NR>1{n++; if ($9=="OOM") o++; if ($9=="OOM"&&$10=="OOM") a++; if ($9!="OOM"&&$10!="OOM") f++}
       END{print (n==18&&o==7&&a==7&&f==11)?0:1}' "$TMP/out") \
    "distributed: 18 cells, the 7 measured OOM predicted OOM, the 11 measured predicted to fit"
  # a cell is the command line's prediction under the runs' strategy: Megatron's kernels,
  # and roofline in NeuSight's units as reproduce uses it
  cell=$(awk -F, '$5=="NVIDIA_H100_80GB_HBM3"&&$4==4&&$7=="dp4"{print $10}' "$TMP/out")
  run_pm --model gpt2-large --gpu h100 --mode train --batch 4 --seq 1024 --strategy dp=4,kernels=megatron \
    --precision fp32 --predictor roofline --plugin-opt roofline:units=neusight --format csv
  ok $(awk -F, -v c="$cell" 'NR>1&&$1=="roofline"{d=$2-c; print (c!=""&&d<0.01&&d>-0.01)?0:1}' "$TMP/out") \
    "distributed: the H100 DP cell is perfmod --strategy dp=4,kernels=megatron's step"
else
  for i in 1 2; do
    echo "ok $((tap_n + 1)) # SKIP NeuSight data not found (set PERFMOD_NEUSIGHT)"
    tap_n=$((tap_n + 1))
  done
fi
finish
