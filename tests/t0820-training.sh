#!/bin/sh
# t0820-training.sh: training steps as Megatron-Core runs them: fused against unfused attention, Transformer Engine's layer, recomputation's time per mode, Megatron's memory terms against its published figures, and the published runs' file.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 57

near () { awk -v a="$1" -v b="$2" -v t="${3:-1e-9}" 'BEGIN { d = a / b - 1; exit !(b > 0 && d < t && d > -t) }'; }

# --- fused attention in the graphs ---
# GPT-3 2.7B, 1 x 2048 tokens: h = 2560, 32 heads of 80, 32 layers.
G="graph --model gpt3-2.7b --gpu h100 --batch 1 --seq 2048 --mode train --format csv"
run_pm $G
cp "$TMP/out" "$TMP/flash.csv"
ok $([ $rc -eq 0 ] && awk -F, 'NR>1&&$3==0&&($6=="BMM"||$6=="Softmax"){bad=1}
     NR>1&&$3==0&&$6=="ATTN"{n[$5]+=1; c[$5]=$4; k[$5]=$7}
     END{exit !(!bad&&n["fw"]==1&&n["bw"]==1&&c["fw"]==32&&k["fw"]=="attention"&&k["bw"]=="attention_bwd")}' \
     "$TMP/out" && echo 0 || echo 1) \
  "bf16 on an H100: one fused attention kernel forward, one backward per layer, no BMM or softmax"
# causal: 4 b h d s (s+1)/2 FLOPs forward, 2.5 times that backward
ok $(awk -F, 'NR>1&&$3==0&&$6=="ATTN"{f[$5]=$13}
     END{x=4*32*80*2048*2049/2; exit !(f["fw"]==x&&f["bw"]==2.5*x)}' "$TMP/out"; echo $?) \
  "fused attention FLOPs: 4 b h d s(s+1)/2 under the causal mask, the backward 2.5 times"
# Transformer Engine's GPT layer: 4 GEMMs forward (qkv, proj, fc1, fc2), 24 s h^2 FLOPs
ok $(awk -F, 'NR>1&&$3==0&&$6=="FC"&&$5=="fw"{n++; f+=$13} NR>1&&$3==0&&$6=="LN"&&$5=="fw"{l++}
     NR>1&&$3==0&&$6=="EW"&&$5=="fw"{e++}
     END{exit !(n==4&&f==24*2048*2560*2560&&l==2&&e==3)}' "$TMP/out"; echo $?) \
  "kernels=te GPT layer: 4 GEMMs (24 s h^2 FLOPs), 2 fused norms, bias-GeLU and 2 bias-dropout-adds"
ok $(awk -F, 'NR>1&&$3==0&&$5=="acc"&&$6=="EW"&&$12==2560*2560*3{bad=1}
     NR>1&&$3==0&&$5=="acc"{n++} END{exit !(!bad&&n==8)}' "$TMP/out"; echo $?) \
  "kernels=te: weight gradients accumulate in the GEMM (no sum over a weight), biases and norms are summed"
run_pm $G --attention unfused
ok $([ $rc -eq 0 ] && awk -F, 'NR>1&&$3==0&&$6=="ATTN"{bad=1} NR>1&&$3==0&&$6=="BMM"&&$5=="fw"{b++}
     NR>1&&$3==0&&$6=="Softmax"&&$5=="fw"{s++} END{exit !(!bad&&b==2&&s==1)}' "$TMP/out" && echo 0 || echo 1) \
  "--attention unfused: two products around one fused softmax"
ok $(awk -F, 'FNR==1{f++} f==1&&$6=="FC"{a+=$4*$13} f==2&&$6=="FC"{b+=$4*$13} END{exit !(a>0&&a==b)}' \
     "$TMP/flash.csv" "$TMP/out"; echo $?) "flash and unfused graphs: the same GEMM FLOPs"
run_pm graph --model llama3-8b --gpu h100 --batch 1 --seq 4096 --mode train --format csv
ok $([ $rc -eq 0 ] && awk -F, 'NR>1&&$3==0&&$5=="fw"{n[$6]++}
     NR>1&&$3==0&&$6=="FC"&&$5=="fw"&&$7=="linear"{k[$11]++}
     END{exit !(n["FC"]==4&&n["LN"]==2&&n["ATTN"]==1&&n["EW"]==4&&k[6144]==1&&k[28672]==1)}' \
     "$TMP/out" && echo 0 || echo 1) \
  "kernels=te Llama layer: fused qkv (4096 + 2 x 1024 wide), gate and up in one GEMM, RMSNorms, rotary, SwiGLU"
run_pm graph --model llama3-8b --gpu h100 --batch 2 --seq 128 --mode inf --format csv
ok $([ $rc -eq 0 ] && grep -q ',ATTN,attention,2,128,128,128,32,' "$TMP/out" && echo 0 || echo 1) \
  "inference (eager, PyTorch's SDPA) uses the fused kernel too"

# --- refusals ---
expect_fail 2 "--attention 'fast': expected flash or unfused" "--attention takes flash or unfused" -- \
  --model gpt2-large --attention fast
expect_fail 2 "--attention flash: fused attention runs in bf16 or fp16 .* fp32" \
  "--attention flash with fp32 attention is refused" -- --model gpt2-large --mode train --precision fp32 --attention flash
expect_fail 2 "--attention flash: .*Tesla_V100" "--attention flash on a V100 (no bf16 matrix units) is refused" -- \
  --model gpt2-large --gpu v100 --attention flash
expect_fail 2 "kernels=te: Megatron-Core.s layer is modelled for GPT, Llama, Mixtral, Qwen2/3 and their MoEs, DeepSeek-V2/V3 and gpt-oss" \
  "kernels=te on BERT is refused" -- --model bert-large --mode train --strategy kernels=te
run_pm --model gpt2-large --mode train --precision fp32
ok $([ $rc -eq 0 ] && grep -q 'attention unfused (fused attention needs bf16/fp16' "$TMP/out" &&
     grep -q 'kernels eager' "$TMP/out" && echo 0 || echo 1) \
  "fp32 training: unfused attention and eager kernels, both on the assumed line"
run_pm --model gpt2-large --mode train
ok $([ $rc -eq 0 ] && grep -q -- '--attention flash' "$TMP/out" && grep -q 'kernels te' "$TMP/out" && echo 0 || echo 1) \
  "bf16 training on the default H100: fused attention and Transformer Engine's kernels, said"

# --- recomputation costs time ---
# Llama 3 8B, 1 x 4096 tokens: 32 layers; the attention core is one fused kernel per layer.
S="--model llama3-8b --gpu h100 --mode train --batch 1 --seq 4096 --predictor roofline --explain"
stage () { awk -v c="$1" '$1 == "roofline" && $2 == "0" { print $c }' "$TMP/out"; }
for r in none selective full; do
  run_pm $S --strategy recompute=$r
  eval "fw_$r=\$(stage 3) bw_$r=\$(stage 4) rc_$r=\$(stage 5)"
  eval "step_$r=\$(awk '/^step_ms/ { print \$2 }' \"\$TMP/out\")"
done
run_pm kernel --op attention --gpu h100 --batch 1 --seq 4096 --heads 32 --kv-heads 8 --head-dim 128 \
  --predictor roofline --format csv
core=$(awk -F, '$1 == "roofline" { print 32 * $5 }' "$TMP/out")
ok $([ "$rc_none" = 0.000 ] && echo 0 || echo 1) "recompute=none: nothing runs again"
ok $(near "$rc_selective" "$core" 1e-3; echo $?) \
  "recompute=selective: the 32 layers' attention forwards again ($rc_selective ms = 32 x perfmod kernel's)"
ok $(near "$bw_selective" "$(awk -v b="$bw_none" -v r="$rc_selective" 'BEGIN { print b + r }')" 1e-4; echo $?) \
  "recompute=selective: the backward grows by exactly that"
ok $(awk -v r="$rc_full" -v f="$fw_full" 'BEGIN { exit !(r < f && r > 0.9 * f) }'; echo $?) \
  "recompute=full: the layers' forward again (below the forward with its embedding and head: $rc_full of $fw_full ms)"
ok $(awk -v a="$step_none" -v b="$step_selective" -v c="$step_full" 'BEGIN { exit !(a < b && b < c) }'; echo $?) \
  "step time: none < selective < full"
run_pm $S --strategy pp=2,mbs=1,recompute=full --batch 4
ok $([ $rc -eq 0 ] && [ "$(awk '$1 == "roofline" && $2 ~ /^[01]$/ && $5 > 0' "$TMP/out" | wc -l)" -eq 2 ] &&
     echo 0 || echo 1) "--explain shows the recomputed time of each pipeline stage"

run_pm --model llama3-8b --gpu h100 --mode train --batch 4 --seq 4096 --strategy pp=2,recompute=selective \
  --format json
ok $([ $rc -eq 0 ] && jq -e '.predictions[0] | (.stages | length) == 2 and .recompute_ms > 0 and
     ((.stages[0].recompute_ms * 4 / .recompute_ms) - 1 | fabs) < 1e-9' "$TMP/out" >/dev/null &&
     echo 0 || echo 1) "JSON: recompute_ms per step (rank 0, 4 micro-batches) and per stage"

# --- context parallelism (ring attention) ---
# Llama 3 8B, 8k tokens over cp=2: each rank's GEMMs see 4096 tokens; its attention 4096
# queries against half the 8192 keys on average (Megatron's load-balanced chunks).
run_pm graph --model llama3-8b --gpu h100 --batch 1 --seq 8192 --mode train --strategy cp=2 --format csv
ok $([ $rc -eq 0 ] && awk -F, 'NR>1&&$3==0&&$6=="ATTN"&&$5=="fw"{a=$8" "$9" "$10" "$11" "$12}
     NR>1&&$3==0&&$6=="FC"&&$5=="fw"&&!f{f=$9} END{exit !(a=="1 4096 4096 128 32"&&f==4096)}' "$TMP/out" &&
     echo 0 || echo 1) "cp=2: GEMMs over 4096 of the 8192 tokens, attention of 4096 queries over 4096 keys"
C="--model llama3-8b --gpu h100 --mode train --batch 8 --seq 8192 --format json"
run_pm $C --strategy dp=8
a1=$(jq '.predictions[0].memory_gib.activations' "$TMP/out")
run_pm $C --strategy dp=4,cp=2
ok $([ $rc -eq 0 ] && jq -e --argjson a "$a1" '.strategy.cp == 2 and .strategy.gpus == 8 and
     .predictions[0].comm_ms.cp > 0 and .predictions[0].memory_gib.activations < 0.55 * $a' "$TMP/out" >/dev/null &&
     echo 0 || echo 1) "cp=2 on 8 GPUs: the ring's collectives, about half the activations"
expect_fail 2 "cp=2: context parallelism runs fused attention" "cp with unfused attention is refused" -- \
  $C --strategy dp=4,cp=2 --attention unfused
expect_fail 2 "cp=3: the sequence must split into 2 x cp equal chunks" "a sequence cp cannot split evenly is refused" -- \
  --model llama3-8b --mode train --batch 8 --seq 8192 --strategy dp=2,cp=3

# --- memory as Megatron allocates it (tests/published-memory.csv) ---
P=2651553280        # GPT-3 2.7B's parameters
bpp () {  # bytes per parameter of weights, gradients and optimizer state
  jq -r '.predictions[0].memory_gib | (.weights + .gradients + .optimizer) * 1073741824' "$TMP/out" |
    awk -v p=$P '{ printf "%.12g", $1 / p }'; }
M="--model gpt3-2.7b --gpu h100 --mode train --batch 8 --seq 256 --format json"
while IFS=, read -r prec row repl a b; do
  case $prec in precision|\#*) continue;; esac
  run_pm $M --precision "$prec" --strategy dp=8,zero=0,kernels=te
  r=$(bpp)
  run_pm $M --precision "$prec" --strategy dp=8,zero=1,kernels=te
  d=$(bpp)
  ok $(near "$r" "$repl" 1e-9 && near "$d" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a + b / 8 }')" 1e-9 &&
       echo 0 || echo 1) "$prec ($row): $repl bytes per parameter, $a + $b/d with the distributed optimizer (got $r, $d)"
done < "$top_srcdir/tests/published-memory.csv"
run_pm $M --strategy dp=8,kernels=eager
ok $(near "$(bpp)" 22 1e-9; echo $?) "PyTorch DDP (kernels=eager) keeps one more gradient copy in its buckets: 22"
run_pm $M --strategy dp=8,kernels=eager --plugin-opt dp:bucket_view=1
ok $(near "$(bpp)" 18 1e-9; echo $?) "... not with gradient_as_bucket_view: 18"

# --- the published runs ---
run_pm reproduce --table published --predictor roofline
ok $([ $rc -eq 0 ] && awk '/^roofline +[0-9]+ / { f = 1; exit !($2 >= 20) } END { if (!f) exit 1 }' "$TMP/out" && echo 0 || echo 1) \
  "reproduce --table published: at least 20 runs predicted"
H="id,model,gpu,gpus,tp,pp,dp,cp,ep,vp,mbs,global_batch,seq,precision,recompute,sp,metric,value,memory_gib,source,flops"
good="r1,gpt3-2.7b,h100,8,1,1,8,1,1,1,1,64,2048,bf16,none,0,step_s,1.5,,src,"
bad () { printf '# a comment, "quoted"\n%s\n%s\n' "$H" "$1" > "$TMP/runs.csv"; }
bad "$good"
run_pm reproduce --table published --published "$TMP/runs.csv" --format csv --predictor roofline
ok $([ $rc -eq 0 ] && [ "$(grep -c '^r1,' "$TMP/out")" -eq 1 ] && echo 0 || echo 1) "a well-formed file of one run"
bad "r1,gpt3-2.7b,h100,8,2,1,8,1,1,1,1,64,2048,bf16,none,0,step_s,1.5,,src,"
expect_fail 2 "runs.csv:3: tp x pp x dp x cp = 16, not the 8 GPUs" "a strategy that is not the GPUs: file:line" -- \
  reproduce --table published --published "$TMP/runs.csv"
bad "r1,gpt3-2.7b,h100,8,1,1,8,1,1,1,1,64,2048,bf16,none,0,tflops_per_gpu,150,,src,"
expect_fail 2 "runs.csv:3: flops '': a tflops_per_gpu row says how its source counted FLOPs" \
  "a FLOP rate without its FLOP count: file:line" -- reproduce --table published --published "$TMP/runs.csv"
bad "r1,gpt3-2.7b,h100,8,1,1,8,1,1,1,1,64,2048,bf16,none,0,speed,1.5,,src,"
expect_fail 2 "runs.csv:3: metric 'speed'" "an unknown metric: file:line" -- \
  reproduce --table published --published "$TMP/runs.csv"
bad "r1,gpt3-9b,h100,8,1,1,8,1,1,1,1,64,2048,bf16,none,0,step_s,1.5,,src,"
expect_fail 2 "runs.csv:3: model 'gpt3-9b' is not a built-in" "an unknown model: file:line" -- \
  reproduce --table published --published "$TMP/runs.csv"
bad "r1,gpt3-2.7b,h100,8,1,1,8,1,1,1,1,64,2048,bf16,none,0,step_s,-1,,src,"
expect_fail 2 "runs.csv:3: value '-1': expected a positive number" "a negative value: file:line" -- \
  reproduce --table published --published "$TMP/runs.csv"
printf '%s\n%s\n%s\n' "$H" "$good" "$good" > "$TMP/runs.csv"
expect_fail 2 "runs.csv:3: id 'r1' again \\(first at line 2\\)" "a repeated id: both lines" -- \
  reproduce --table published --published "$TMP/runs.csv"
printf '%s,zero,attention\n%s,7,\n' "$H" "$good" > "$TMP/runs.csv"
expect_fail 2 "runs.csv:2: zero '7': expected a ZeRO stage 0 to 3" "a bad ZeRO stage: file:line" -- \
  reproduce --table published --published "$TMP/runs.csv"
printf '%s,zero,attention\n%s,,fast\n' "$H" "$good" > "$TMP/runs.csv"
expect_fail 2 "runs.csv:2: attention 'fast': expected flash, unfused or nothing" \
  "a bad attention: file:line" -- reproduce --table published --published "$TMP/runs.csv"
# memory (GiB) of the one run with the row's zero and attention
rowmem () {
  printf '%s,zero,attention\n%s,%s,%s\n' "$H" "$good" "$1" "$2" > "$TMP/runs.csv"
  run_pm reproduce --table published --published "$TMP/runs.csv" --format csv --predictor roofline
  awk -F, '$1 == "r1" { print $19 }' "$TMP/out"; }
m0=$(rowmem '' '') m3=$(rowmem 3 '') mu=$(rowmem '' unfused)
ok $(awk -v a="$m3" -v b="$m0" -v u="$mu" 'BEGIN { exit !(a > 0 && a < b && u > b) }'; echo $?) \
  "a row's zero=3 shards the weights too ($m3 < $m0 GiB); attention=unfused keeps the scores ($mu GiB)"
printf 'id,model\nr1,gpt3-2.7b\n' > "$TMP/runs.csv"
expect_fail 2 "runs.csv:1: missing column 'gpu'" "a missing column: file:line" -- \
  reproduce --table published --published "$TMP/runs.csv"

# --- tp communication overlap (tpo=1: Transformer Engine's userbuffers) ---
# GPT-3 175B, tp=8 with sequence parallelism: never slower, less tp communication exposed
G="--model gpt3-175b --gpu a100 --mode train --precision bf16 --batch 1536 --seq 2048 --predictor roofline,tile-mlp"
rc=0
for st in tp=8,pp=8,dp=16,sp=1 tp=8,pp=16,dp=8,sp=1,recompute=full tp=8,pp=8,dp=16,sp=1,mbs=2; do
  run_pm $G --strategy "$st" --nodes 128 --format json; cp "$TMP/out" "$TMP/t0.json"
  run_pm $G --strategy "$st,tpo=1" --nodes 128 --format json; cp "$TMP/out" "$TMP/t1.json"
  jq -e -n --slurpfile a "$TMP/t0.json" --slurpfile b "$TMP/t1.json" '[range(2) as $i |
      $a[0].predictions[$i] as $x | $b[0].predictions[$i] as $y |
      $y.step_ms < $x.step_ms and $x.overlapped_ms.tp == 0 and $y.overlapped_ms.tp > 0 and
      $y.comm_ms.tp == $x.comm_ms.tp and
      ($y.comm_ms.tp - $y.overlapped_ms.tp) < 0.5 * $x.comm_ms.tp] | all' >/dev/null ||
    { diag "$st: $(jq -c '[.predictions[] | [.step_ms, .comm_ms.tp, .overlapped_ms.tp]]' "$TMP/t0.json" "$TMP/t1.json")"; rc=1; }
done
ok $rc "GPT-3 175B tp=8: tpo=1 faster than tpo=0 on both predictors, with under half the tp communication exposed"
# by hand on the tiny model (its GEMMs take nanoseconds, each collective 5 us: comm > gemm
# at every site): exposed = comm/tp + (1 - 1/tp)(comm - gemm), so each site hides
# (1 - 1/tp) gemm; the GEMMs: forward; backward the column-parallel ones' data and weight
# gradients, the row-parallel ones' data gradient (half their backward)
tiny="$TMP/tiny.json"     # GPT-2 style (Megatron-Core's GPT layer): L=4, d=8, 4 heads, f=32
printf '{"model_type": "gpt2", "n_layer": 4, "n_embd": 8, "n_head": 4, "n_inner": 32,\n "n_positions": 16, "vocab_size": 16}\n' > "$tiny"
T="--model $tiny --gpu h100 --mode train --batch 1 --seq 8 --predictor roofline"
run_pm $T --strategy tp=2,sp=1,tpo=1 --per-op --format csv
hand=$(awk -F, '$4 ~ /linear_(qkv|fc1)$/ { s += $10 * ($11 + $12) }
                $4 ~ /linear_(proj|fc2)$/ { s += $10 * ($11 + $12 / 2) }
                $6 == "COMM" && $9 >= 0 && ($11 + $12) < 1e-3 { bad = 1 }
                END { if (!bad) printf "%.12g", s / 2 }' "$TMP/out")
run_pm $T --strategy tp=2,sp=1,tpo=1 --format json; cp "$TMP/out" "$TMP/t1.json"
run_pm $T --strategy tp=2,sp=1 --format json; cp "$TMP/out" "$TMP/t0.json"
ok $([ -n "$hand" ] && near "$(jq '.predictions[0].overlapped_ms.tp' "$TMP/t1.json")" "$hand" 1e-9 && echo 0 || echo 1) \
  "tiny GEMMs, slow links: tp_overlapped_ms = (1 - 1/tp) x the paired GEMMs' time ($hand ms), by hand"
ok $(near "$(jq -n --slurpfile a "$TMP/t0.json" --slurpfile b "$TMP/t1.json" \
       '$a[0].predictions[0].step_ms - $b[0].predictions[0].step_ms')" "$hand" 1e-3 && echo 0 || echo 1) \
  "... and the step is that much shorter (one micro-batch, one rank)"
# the userbuffers: ten gathered micro-batch activations (8 tokens x 8 wide, bf16; memory in GiB)
ok $(jq -e -n --slurpfile a "$TMP/t0.json" --slurpfile b "$TMP/t1.json" \
       '(($b[0].predictions[0].memory_gib.activations - $a[0].predictions[0].memory_gib.activations) * 1073741824
         - 10 * 8 * 8 * 2 | fabs) < 1e-3' \
       >/dev/null && echo 0 || echo 1) "tpo=1 keeps Transformer Engine's ten communication buffers"
expect_one_line 2 "tpo=1: .*needs sp=1" "tpo=1 without sequence parallelism: refused, naming the key" -- \
  $T --strategy tp=2,tpo=1
expect_one_line 2 "tpo=1: .*needs tp>1" "tpo=1 with tp=1: refused, naming the key" -- \
  $T --strategy tp=1,sp=1,tpo=1
expect_one_line 2 "tpo=1: .*needs kernels=te" "tpo=1 with kernels=eager: refused, naming the key" -- \
  $T --strategy tp=2,sp=1,tpo=1,kernels=eager
# a given split: the optimizer step and the gradients are those of the rank with the most
# parameters (GPT-3 2.7B: a layer 79M, the embedding 129M): 5:8:8:5:6's is rank 1 (8 layers,
# 629M), more than 6:7:7:6:6's rank 0 (6 layers and the embedding, 600M), though rank 0 of
# 5:8:8:5:6 holds fewer (522M)
opt () {
  "$PERFMOD" --model gpt3-2.7b --mode train --batch 80 --seq 2048 --strategy "pp=5,dp=2,split=$1" \
    --format json 2>/dev/null | jq '.predictions[0].optimizer_ms'
}
a=$(opt 5:8:8:5:6) b=$(opt 6:7:7:6:6)
ok $(awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && b > 0 && a / b > 629 / 600 - 0.01 && a / b < 629 / 600 + 0.01) }'; echo $?) \
  "split=5:8:8:5:6: the optimizer step of its 8-layer rank ($a ms), 629/600 of 6:7:7:6:6's ($b ms)"
# the assumed: line is what was modelled: kernels given in the strategy are no assumption,
# and Megatron's own layer (kernels=megatron) runs its scores GEMM and masked softmax, not
# fused attention
run_pm --model gpt3-2.7b --mode train --strategy tp=2,kernels=megatron --format json
jq -r '.assumed' "$TMP/out" >"$TMP/assumed"
run_pm --model gpt3-2.7b --mode train --strategy tp=2,kernels=megatron --per-op --format csv
ok $([ "$rc" -eq 0 ] && grep -q "\--attention unfused (Megatron's layer" "$TMP/assumed" &&
     ! grep -q 'kernels te\|--attention flash' "$TMP/assumed" &&
     awk -F, 'NR > 1 && $5 == "ATTENTION" { a++ } NR > 1 && $5 == "masked_fill" { m++ } END { exit !(m > 0 && a == 0) }' "$TMP/out"; echo $?) \
  "kernels=megatron: assumed unfused attention, as modelled (masked_fill, no fused attention kernel), no 'kernels te'"
run_pm --model gpt3-2.7b --mode train --strategy tp=2,kernels=eager
ok $([ "$rc" -eq 0 ] && grep -q '^assumed: .*--attention flash' "$TMP/out" && ! grep -q '^assumed: .*kernels ' "$TMP/out"; echo $?) \
  "kernels=eager given: the assumed: line names no kernels"
# Megatron-Core's recipes run the distributed optimizer: a kernels=te step over dp ranks
# without zero= is zero=1 (6 + 12/8 bytes a parameter in bf16), and says so
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 8 --seq 256 --format json --strategy dp=8
ok $([ "$rc" -eq 0 ] && near "$(bpp)" 7.5 1e-9 && jq -e '.strategy.zero == 1' "$TMP/out" >/dev/null &&
     jq -r '.assumed' "$TMP/out" | grep -q "zero=1 (Megatron-Core's distributed optimizer"; echo $?) \
  "kernels=te over dp=8 with no zero given: zero=1, 7.5 bytes a parameter, on the assumed: line"
# every assumption given: the assumed: line holds only the memory reserve, no stray comma;
# and with --nodes but no --strategy (one device's step, no optimizer sharded) no zero=1
run_pm --model gpt3-2.7b --mode train --gpu NVIDIA_H100_80GB_HBM3 --precision bf16 --attention flash --seq 1024 \
  --predictor roofline --batch 8 --strategy tp=2,zero=0,kernels=te,host_us=7
ok $([ "$rc" -eq 0 ] && grep -q '^assumed: memory reserve 10^9 bytes + 5 %$' "$TMP/out"; echo $?) \
  "all given but the reserve: 'assumed: memory reserve ...', no leading comma"
run_pm --model gpt3-2.7b --mode train --batch 64 --nodes 2
ok $([ "$rc" -eq 0 ] && grep -q '^assumed: ' "$TMP/out" && ! grep -q 'zero=1' "$TMP/out"; echo $?) \
  "--nodes without --strategy: no zero=1 announced where no optimizer is sharded"
expect_one_line 2 "--attention flash with kernels=megatron: Megatron's own layer runs its masked softmax" \
  "--attention flash with kernels=megatron refused (it was run unfused without a word)" -- \
  --model gpt3-2.7b --mode train --strategy tp=2,kernels=megatron --attention flash
finish
