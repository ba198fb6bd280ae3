#!/bin/sh
# t0850-serving.sh: --gen under a strategy (the engine's kernels with --engine, per replica: tensor parallelism speeds the decode step, shards the KV cache, pipeline stages split it, experts a batch reaches, the largest batch that fits, the formats agree), its bad input, and the engine's fused kernels and all-reduce (perfmod serve and reproduce --table serving: t0860-serve.sh).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 60

# field NAME: the CSV column NAME of the first prediction in $TMP/out
field () {
  awk -F, -v k="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i } NR == 2 { print $c }' "$TMP/out"
}
serving () {  # serving VAR ARGS...: run --gen with a strategy as CSV, keep the output in $TMP/VAR
  v=$1
  shift
  run_pm --gpu h100 --format csv "$@"
  cp "$TMP/out" "$TMP/$v"
  [ "$rc" -eq 0 ] || diag "exit $rc: $*" "$(cat "$TMP/err")"
}
get () { cp "$TMP/$1" "$TMP/out"; field "$2"; }

serving tp1 --model llama3.1-70b --gen 128 --batch 64 --seq 1024 --dtype fp8 --strategy tp=1
serving tp2 --model llama3.1-70b --gen 128 --batch 64 --seq 1024 --dtype fp8 --strategy tp=2
ok $(awk -v a="$(get tp2 tpot_ms)" -v b="$(get tp1 tpot_ms)" 'BEGIN { exit !(a > 0 && a < b) }'; echo $?) \
  "70B at batch 64: tp=2's time per output token ($(get tp2 tpot_ms)) is below tp=1's ($(get tp1 tpot_ms))"
ok $(awk -v a="$(get tp2 kv_cache_gib)" -v b="$(get tp1 kv_cache_gib)" 'BEGIN { d = a / b - 0.5; exit !(d < 1e-6 && d > -1e-6) }'; echo $?) \
  "the KV cache per GPU halves with tp=2 (8 key/value heads): $(get tp1 kv_cache_gib) -> $(get tp2 kv_cache_gib) GiB"
ok $(awk -v a="$(get tp2 weights_gib)" -v b="$(get tp1 weights_gib)" 'BEGIN { exit !(a < 0.55 * b && a > 0.45 * b) }'; echo $?) \
  "the weights per GPU about halve with tp=2"
ok $(awk -v a="$(get tp2 tpot_comm_ms)" -v b="$(get tp1 tpot_comm_ms)" 'BEGIN { exit !(a > 0 && b == 0) }'; echo $?) \
  "tp=2's decode step has its all-reduces, tp=1's none"

serving pp2 --model llama3.1-70b --gen 128 --batch 64 --seq 1024 --dtype fp8 --strategy tp=2,pp=2
ok $(awk -v a="$(get pp2 kv_cache_gib)" -v b="$(get tp2 kv_cache_gib)" 'BEGIN { d = a / b - 0.5; exit !(d < 1e-6 && d > -1e-6) }'; echo $?) \
  "pp=2 splits the layers: half the KV cache per GPU"
ok $(awk -v a="$(get pp2 tpot_ms)" -v b="$(get tp2 tpot_ms)" 'BEGIN { exit !(b > 0 && a >= b) }'; echo $?) \
  "a token passes the stages in sequence: pp=2 is no faster per token ($(get pp2 tpot_ms) vs $(get tp2 tpot_ms))"

serving dp2 --model llama3.1-8b --gen 64 --batch 16 --seq 512 --strategy tp=2,dp=2
serving one --model llama3.1-8b --gen 64 --batch 8 --seq 512 --strategy tp=2
ok $(awk -v a="$(get dp2 tokens_per_s)" -v b="$(get one tokens_per_s)" -v c="$(get dp2 tokens_per_s_replica)" \
  'BEGIN { d = a / (2 * b) - 1; e = c / b - 1; exit !(d < 1e-6 && d > -1e-6 && e < 1e-6 && e > -1e-6) }'; echo $?) \
  "dp=2 replicas of batch 8 give twice one replica's tokens/s"

# MoE: a decode step at batch 1 reads the top_k experts it reaches, not all of them
serving moe1 --model mixtral-8x7b --gen 16 --batch 1 --seq 256 --strategy tp=2
serving moe256 --model mixtral-8x7b --gen 16 --batch 256 --seq 256 --strategy tp=2
ok $(awk -v a="$(get moe1 tpot_ms)" -v b="$(get moe256 tpot_ms)" 'BEGIN { exit !(a > 0 && a < b) }'; echo $?) \
  "MoE decode at batch 1 ($(get moe1 tpot_ms) ms) is cheaper than at batch 256 ($(get moe256 tpot_ms) ms)"
run_pm --gpu h100 --model mixtral-8x7b --gen 16 --batch 1 --seq 256 --strategy tp=2 --explain
n=$(awk '/one decode step/ { f = 1 } f && $1 ~ /_experts_gather$/ { n = $3 / 32 } END { print n + 0 }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && echo 0 || echo 1) "--explain: batch 1's decode step runs top_k = 2 experts ($n)"
ok $(grep -q 'tp_allreduce_fw' "$TMP/out" && grep -q 'prefill of 1 prompts' "$TMP/out"; echo $?) \
  "--explain shows the prefill and a decode step op by op with their all-reduces"

# ep within the tp ranks (etp): each GPU holds experts/ep whole experts (etp=1) or all of
# them at 1/etp of their width; tokens are not dispatched (every rank has them all)
moecfg () {  # moecfg DIR MOE_FFN: a small Qwen3-MoE, 8 experts, top 2
  mkdir -p "$TMP/$1"
  cat > "$TMP/$1/config.json" <<EOF
{ "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 1024,
  "intermediate_size": 4096, "moe_intermediate_size": $2, "num_experts": 8,
  "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_attention_heads": 8,
  "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 4096, "hidden_act": "silu",
  "rms_norm_eps": 1e-06, "tie_word_embeddings": false, "decoder_sparse_step": 1,
  "mlp_only_layers": [], "norm_topk_prob": true }
EOF
}
moecfg moeA 1024
moecfg moeB 2048
serving wA --model "$TMP/moeA/config.json" --dtype bf16 --gen 8 --batch 2 --seq 256 --strategy tp=4,ep=4,etp=1
serving wB --model "$TMP/moeB/config.json" --dtype bf16 --gen 8 --batch 2 --seq 256 --strategy tp=4,ep=4,etp=1
# the two differ only in each expert's width (1024 more): per GPU 8/4 = 2 experts of
# 3 x 1024 x 1024 more parameters (gate, up, down) in 2 layers, 2 bytes each
want=$(awk 'BEGIN { printf "%.9f", 2 * (8 / 4) * 3 * 1024 * 1024 * 2 / 1073741824 }')
ok $(awk -v a="$(get wA weights_gib)" -v b="$(get wB weights_gib)" -v w="$want" \
  'BEGIN { d = (b - a) / w - 1; exit !(d < 1e-3 && d > -1e-3) }'; echo $?) \
  "ep=4, etp=1: the expert weights per GPU are experts/ep x an expert's ($(get wA weights_gib) -> $(get wB weights_gib) GiB, want +$want)"
serving wC --model "$TMP/moeA/config.json" --dtype bf16 --gen 8 --batch 2 --seq 256 --strategy tp=4,ep=2,etp=2
serving wD --model "$TMP/moeB/config.json" --dtype bf16 --gen 8 --batch 2 --seq 256 --strategy tp=4,ep=2,etp=2
ok $(awk -v a="$(get wC weights_gib)" -v b="$(get wD weights_gib)" -v w="$want" \
  'BEGIN { d = (b - a) / w - 1; exit !(d < 1e-3 && d > -1e-3) }'; echo $?) \
  "ep=2, etp=2: 8/2 experts per GPU at half their width, the same expert weights per GPU"
# a decode step at batch 1 under the roofline: ep=8 puts the token's 8 experts on ranks at
# random, the busiest of which holds more than one while etp=8 splits each expert over all
# eight; the layer waits for its busiest rank (the all-reduce after it)
serving ep8 --model qwen3-235b-a22b --dtype fp8 --engine --gen 64 --batch 1 --seq 1024 --strategy tp=8,ep=8,etp=1
serving etp8 --model qwen3-235b-a22b --dtype fp8 --engine --gen 64 --batch 1 --seq 1024 --strategy tp=8,ep=1,etp=8
ok $(awk -v a="$(get ep8 tpot_ms)" -v b="$(get etp8 tpot_ms)" 'BEGIN { exit !(b > 0 && a > b) }'; echo $?) \
  "decode at batch 1: ep=8's step ($(get ep8 tpot_ms) ms) is slower than etp=8's ($(get etp8 tpot_ms) ms)"
ok $(awk -v a="$(get ep8 weights_gib)" -v b="$(get etp8 weights_gib)" -v c="$(get ep8 tpot_comm_ms)" -v d="$(get etp8 tpot_comm_ms)" \
  'BEGIN { exit !(a > 0 && c > 0 && a == b && c == d) }'; echo $?) \
  "ep=8 and etp=8 hold the same weights per GPU and run the same all-reduces"
run_pm --gpu h100 --model qwen3-235b-a22b --dtype fp8 --engine --gen 64 --batch 1 --seq 1024 --strategy tp=8,ep=8,etp=1 --explain
n=$(awk '/one decode step/ { f = 1 } f && $1 ~ /^layers_0_tp_allreduce_fw$/ { n++ } END { print n + 0 }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && grep -q '^MoE layers (ep=8 x etp=1 within tp=8): no dispatch' "$TMP/out" &&
     ! grep -q 'alltoall' "$TMP/out" && echo 0 || echo 1) \
  "--explain: the MoE layer's outputs summed by tp's all-reduce after it, no all-to-all ($n all-reduces a layer)"
# an engine's fused MoE kernel reads the weights of the experts a model's router reaches;
# a uniform router (--routing uniform): each token picks 8 of Qwen3-235B's 128, so with 16
# tokens one expert goes untouched with
# probability (1 - 8/128)^16 = 0.35607; ep=4 (within tp=4): a rank's 32 experts, 20.606
# reached on average, sd sqrt(32 p (1 - p)) = 2.7087, the busiest of 4 ranks (Blom's
# expected maximum of 4 normals, 1.0491 sd) 23.448; etp=4 (ep=1): every rank reaches
# 128 p = 82.423 quarter experts.  Bytes: the reached experts' 3 x 4096 x 1536 fp8 weights
# (over etp) and 32 (ep=4) or 128 assignments' bf16 activations, 2 x (5 x 4096 + 2 x 2f
# + 2f + 4096 / 8) B each (f = 1536, or 384 over etp), at the roofline's 3430 GB/s (the measured kernels spread
# their assignments over 32 and 128 experts: the balanced collectors' routing)
moe_decode_ms () {
  run_pm --gpu h100 --model qwen3-235b-a22b --dtype fp8 --engine=trtllm --gen 64 --batch 16 \
    --seq 1024 --strategy "$1" --predictor roofline --explain ${2:+--routing "$2"}
  awk '/one decode step/ { f = 1 } f && $1 == "layers_0_experts" && $2 == "MoE" { print $4; exit }' "$TMP/out"
}
a=$(moe_decode_ms tp=4,ep=4,etp=1 uniform)
b=$(moe_decode_ms tp=4,ep=1,etp=4 uniform)
ok $(awk -v a="$a" -v b="$b" 'BEGIN {
  wa = (23.448 * 3 * 4096 * 1536 + 32 * 2 * 30208) / 3430e6
  wb = (82.423 * 3 * 4096 * 384 + 128 * 2 * 23296) / 3430e6
  exit !(a / wa - 1 < 1e-3 && a / wa - 1 > -1e-3 && b / wb - 1 < 1e-3 && b / wb - 1 > -1e-3) }'; echo $?) \
  "a decode step's fused MoE kernel at 16 tokens reads the experts they reach: ep=4 the busiest rank's 23.45 of 32 ($a ms), etp=4 82.42 of 128 ($b ms)"
# the default router (--routing powerlaw, exponent 1.01 as aiconfigurator draws it) spreads
# those 16 tokens over fewer experts, and a larger exponent over fewer still; the reads fall
c=$(moe_decode_ms tp=4,ep=4,etp=1) d=$(moe_decode_ms tp=4,ep=4,etp=1 powerlaw:1.01)
e=$(moe_decode_ms tp=4,ep=4,etp=1 powerlaw:1.2)
ok $(awk -v a="$a" -v c="$c" -v d="$d" -v e="$e" 'BEGIN { exit !(c > 0 && c == d && e < c && c < a) }'; echo $?) \
  "the power-law router (the default, 1.01) reads fewer experts at 16 tokens than the uniform one ($c < $a ms), 1.2 fewer still ($e ms)"
expect_one_line 2 "--routing 'powerlaw:1': expected uniform, powerlaw or powerlaw:A" "--routing with an exponent of 1 refused, named" -- \
  --model qwen3-235b-a22b --mode inf --engine=trtllm --routing powerlaw:1
expect_one_line 2 "--routing: a serving engine's router" "--routing without --engine=NAME refused" -- \
  --model qwen3-235b-a22b --mode inf --routing uniform
expect_one_line 2 'etp=1: ep=4 x etp=1 must equal tp=8' "ep x etp other than tp is refused naming etp" -- \
  --model qwen3-235b-a22b --gen 16 --strategy tp=8,ep=4,etp=1
expect_one_line 2 'ep=3 does not divide the 8 experts' "ep not dividing the experts is refused naming ep" -- \
  --model "$TMP/moeA/config.json" --gen 16 --strategy tp=3,ep=3,etp=1
# attention data parallelism: the experts over every replica's tp ranks (ep x etp = tp x dp,
# vLLM's --data-parallel-size with --enable-expert-parallel): 8 experts over tp=2 x dp=4
# GPUs hold one whole expert each, where ep=2 within tp=2 holds four; the difference is
# 3 experts of 3 x 1024 x 1024 parameters in 2 layers, 2 bytes each
serving adp --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 512 --seq 256 --strategy tp=2,dp=4,ep=8,etp=1
serving eptp --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 128 --seq 256 --strategy tp=2,ep=2,etp=1
want=$(awk 'BEGIN { printf "%.9f", 2 * 3 * 3 * 1024 * 1024 * 2 / 1073741824 }')
ok $(awk -v a="$(get adp weights_gib)" -v b="$(get eptp weights_gib)" -v w="$want" \
  'BEGIN { d = (b - a) / w - 1; exit !(d < 1e-3 && d > -1e-3) }'; echo $?) \
  "attention data parallelism (tp=2,dp=4,ep=8,etp=1): one whole expert a GPU, three fewer than ep=2 within tp=2 ($(get eptp weights_gib) -> $(get adp weights_gib) GiB, want -$want)"
# Its decode step at 512 sequences (128 a replica): each tp rank all-gathers its 64 tokens'
# hidden states over the 8 expert ranks (8 x 64 x 1024 x 2 = 1048576 bytes gathered) and
# reduce-scatters them back, as NCCL's model costs them on one node; the rank's expert then
# runs on every replica's 4 x 128 tokens, 128 of their 1024 top-2 assignments (roofline:
# its 3 x 1024 x 1024 bf16 weights and 128 x 2 x (5 x 1024 + 2 x 2048 + 2 x 1024 + 512)
# bytes of activations at 3430 GB/s)
run_pm --gpu h100 --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 512 \
  --seq 256 --strategy tp=2,dp=4,ep=8,etp=1 --predictor roofline --explain --routing uniform
row () { awk -v n="$1" '/one decode step/ { f = 1 } f && $1 == n { print $4; exit }' "$TMP/out"; }
ag=$(row layers_0_ep_allgather_fw) rs=$(row layers_0_ep_reduce_scatter_fw) mo=$(row layers_0_experts)
coll () {
  "$PERFMOD" kernel --op collective --coll "$1" --ranks 8 --bytes 1048576 --gpu h100 \
    --predictor tile-mlp --plugin-opt tile-mlp:comm_params=none --format csv | awk -F, 'NR == 2 { print $5 }'
}
wag=$(coll all_gather) wrs=$(coll reduce_scatter)
ok $([ "$rc" -eq 0 ] && grep -q 'over the tp=2 ranks of 4 replicas' "$TMP/out" &&
     awk -v a="$ag" -v b="$rs" -v c="$mo" -v wa="$wag" -v wb="$wrs" 'BEGIN {
       wm = (3 * 1024 * 1024 * 2 + 128 * 2 * (5 * 1024 + 2 * 2048 + 2 * 1024 + 512)) / 3430e6
       exit !(wa > 0 && (a / wa - 1)^2 < 1e-6 && (b / wb - 1)^2 < 1e-6 && (c / wm - 1)^2 < 1e-6) }'; echo $?) \
  "attention data parallelism: a decode step gathers the replicas' tokens ($ag ms = $wag) and reduce-scatters them ($rs ms = $wrs), the expert runs on all of them ($mo ms)"
# a dispatcher given replaces the gather: DeepEP's kernels (flex) or NCCL's all-to-all
run_pm --gpu h100 --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 512 \
  --seq 256 --strategy tp=2,dp=4,ep=8,etp=1,dispatcher=flex --explain
ok $([ "$rc" -eq 0 ] && grep -q '^layers_0_ep_deepep_fw ' "$TMP/out" && ! grep -q 'ep_allgather' "$TMP/out" &&
     grep -q 'over the 8 expert ranks (flex)' "$TMP/out"; echo $?) \
  "attention data parallelism with dispatcher=flex: DeepEP's dispatch and combine, no gather"
expect_one_line 2 'ep=8 with tp=2: the experts over ep x tp = 16 ranks do not fit the tp x dp = 8 GPUs' \
  "experts over more ranks than the replicas have are refused, naming etp" -- \
  --model "$TMP/moeA/config.json" --gen 16 --batch 8 --strategy tp=2,dp=4,ep=8
expect_one_line 2 'etp=1: ep=4 x etp=1 must equal tp=2 .* or tp x dp = 8' \
  "ep x etp neither tp nor tp x dp is refused naming both" -- \
  --model "$TMP/moeA/config.json" --gen 16 --batch 8 --strategy tp=2,dp=4,ep=4,etp=1
# the experts' width over etp ranks of the replicas too (TensorRT-LLM's moe_tp_size under
# attention DP): ep=4 x etp=2 over the 8 GPUs hold two experts at half width a GPU, the
# bytes of ep=8's one whole expert; the tokens gathered over all 8 ranks as ep=8's; the
# experts' kernel reads its 2 half-width experts' 2 x 3 x 1024 x 512 bf16 weights and 256 of
# the 1024 top-2 assignments' activations, 2 x (5 x 1024 + 2 x 1024 + 1024 + 512) bytes
# each (f = 512), at 3430 GB/s
run_pm --gpu h100 --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 512 \
  --seq 256 --strategy tp=2,dp=4,ep=4,etp=2 --predictor roofline --explain --routing uniform
ag2=$(row layers_0_ep_allgather_fw) mo2=$(row layers_0_experts)
said=$([ "$rc" -eq 0 ] && grep -c '^MoE layers (ep=4 x etp=2 over the tp=2 ranks of 4 replicas): .* over the 8 expert ranks' "$TMP/out")
serving etp2 --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 512 --seq 256 --strategy tp=2,dp=4,ep=4,etp=2
ok $([ "$said" = 1 ] &&
     awk -v a="$ag2" -v b="$ag" -v c="$mo2" -v w1="$(get etp2 weights_gib)" -v w2="$(get adp weights_gib)" 'BEGIN {
       wm = (2 * 3 * 1024 * 512 * 2 + 256 * 2 * (5 * 1024 + 2 * 1024 + 1024 + 512)) / 3430e6
       exit !(a > 0 && a == b && (c / wm - 1)^2 < 1e-6 && w1 > 0 && w1 == w2) }'; echo $?) \
  "attention data parallelism with etp=2: ep=8's weights a GPU ($(get etp2 weights_gib) GiB) and gather ($ag2 ms), two half-width experts ($mo2 ms)"
# ep=1 x etp=4 (each expert a quarter wide on every one of 4 one-GPU replicas, the
# all-gather named or not) holds ep=4 x etp=1's expert bytes a GPU and gathers as much
st1 () { run_pm --gpu h100 --model "$TMP/moeA/config.json" --dtype bf16 --engine=vllm --gen 8 --batch 512 \
           --seq 256 --strategy "$1" --predictor roofline --explain --format csv --routing uniform
         awk -F, -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i } NR == 2 { print $c }' "$TMP/out"; }
q1=$(st1 tp=1,dp=4,ep=1,etp=4,dispatcher=allgather weights_gib) q2=$(st1 tp=1,dp=4,ep=4,etp=1 weights_gib)
c1=$(st1 tp=1,dp=4,ep=1,etp=4 tpot_comm_ms) c2=$(st1 tp=1,dp=4,ep=4,etp=1 tpot_comm_ms)
ok $(awk -v a="$q1" -v b="$q2" -v c="$c1" -v d="$c2" 'BEGIN { exit !(a > 0 && a == b && c > 0 && c == d) }'; echo $?) \
  "attention data parallelism with ep=1 x etp=4: ep=4's weights a GPU ($q1 GiB) and communication ($c1 ms a decode step)"
expect_one_line 2 'dispatcher=alltoall with etp=2 over the replicas: .* the all-gather dispatcher' \
  "etp over the replicas with another dispatcher than the all-gather is refused" -- \
  --model "$TMP/moeA/config.json" --gen 16 --batch 8 --strategy tp=2,dp=4,ep=4,etp=2,dispatcher=alltoall
expect_one_line 2 'ep=8 x etp=1 over the tp x dp ranks \(attention data parallelism\) with pp=2: modelled for one pipeline stage' \
  "attention data parallelism with pp=2 is refused" -- \
  --model "$TMP/moeA/config.json" --gen 16 --batch 8 --strategy tp=1,pp=2,dp=8,ep=8,etp=1
moecfg moeC 1004
expect_one_line 2 'etp=8 does not divide the expert width 1004' "etp not dividing the expert width is refused" -- \
  --model "$TMP/moeC/config.json" --gen 16 --strategy tp=8,ep=1,etp=8
expect_one_line 2 'etp=2 in training: needs etp=1' "an expert tp other than 1 in training is refused" -- \
  --model "$TMP/moeA/config.json" --mode train --batch 4 --seq 256 --strategy tp=4,ep=2,etp=2,sp=1
expect_one_line 2 'etp=1 in training: needs tp>1 with sp=1' "etp=1 in training without sequence parallelism is refused" -- \
  --model "$TMP/moeA/config.json" --mode train --batch 4 --seq 256 --strategy tp=4,ep=4,etp=1
expect_one_line 2 'ep=4: the model has no experts' "etp on a dense model is refused" -- \
  --model llama3.1-8b --gen 16 --strategy tp=4,ep=4,etp=1

# max_batch fits, one more does not
serving mb --model llama3.1-70b --gen 512 --batch 8 --seq 1024 --strategy tp=2
mb=$(get mb max_batch)
serving fit --model llama3.1-70b --gen 512 --batch "$mb" --seq 1024 --strategy tp=2
serving over --model llama3.1-70b --gen 512 --batch $((mb + 1)) --seq 1024 --strategy tp=2
ok $([ "$mb" -gt 1 ] && [ "$(get fit oom)" = false ] && [ "$(get over oom)" = true ] && echo 0 || echo 1) \
  "max_batch $mb fits, $((mb + 1)) does not"

# the three formats give the same numbers
run_pm --gpu h100 --model llama3.1-8b --gen 32 --batch 8 --seq 512 --strategy tp=2 --format json
cp "$TMP/out" "$TMP/json"
run_pm --gpu h100 --model llama3.1-8b --gen 32 --batch 8 --seq 512 --strategy tp=2
cp "$TMP/out" "$TMP/table"
run_pm --gpu h100 --model llama3.1-8b --gen 32 --batch 8 --seq 512 --strategy tp=2 --format csv
agree=0
for k in ttft_ms tpot_ms tokens_per_s kv_cache_gib weights_gib max_batch; do
  c=$(field $k)
  # JSON: memory under memory_gib (kv_cache_gib is memory_gib.kv_cache)
  j=$(python3 -c "import json,sys; p = json.load(open(sys.argv[1]))['predictions'][0]; k = sys.argv[2]
print(p['memory_gib'][k[:-4]] if k.endswith('_gib') else p[k])" "$TMP/json" $k 2>/dev/null || echo none)
  t=$(awk -v k=$k '$1 == k { print $2 }' "$TMP/table")
  # the table rounds to 3 decimals: within half its last digit or 1e-3
  awk -v c="$c" -v j="$j" -v t="$t" 'BEGIN { r = c == 0 ? 1 : c; d = c - t; if (d < 0) d = -d
    exit !((c - j) / r < 1e-5 && (j - c) / r < 1e-5 && (d <= 0.0005 || d / r < 1e-3)) }' ||
    { agree=1; diag "$k: csv $c json $j table $t"; }
done
ok $agree "table, csv and json agree on ttft_ms, tpot_ms, tokens_per_s, kv_cache_gib, weights_gib, max_batch"
ok $(grep -q '^assumed: .*serving: each replica prefills' "$TMP/table"; echo $?) "the assumed: line names the serving defaults"

# without a strategy, --gen is the single-GPU prediction it was, and tp=1 agrees with it
run_pm --gpu h100 --model llama3.1-8b --gen 32 --batch 8 --seq 512 --format csv
a=$(awk -F, 'NR == 2 { print $8 }' "$TMP/out")
serving t1 --model llama3.1-8b --gen 32 --batch 8 --seq 512 --strategy tp=1
ok $(awk -v a="$a" -v b="$(get t1 tpot_ms)" 'BEGIN { d = a / b - 1; exit !(d < 1e-6 && d > -1e-6) }'; echo $?) \
  "tp=1's decode step equals the single-GPU --gen one ($a ms)"

# bad input: one line, exit 2
expect_one_line 2 'pp=3 does not divide the 80 layers' "--gen with pp that does not divide the layers" -- \
  --model llama3.1-70b --gen 16 --strategy pp=3
expect_one_line 2 "--gen" "--gen 0 is refused" -- --model llama3.1-8b --gen 0 --strategy tp=2
expect_one_line 2 "--gen" "--gen -4 is refused" -- --model llama3.1-8b --gen -4 --strategy tp=2
expect_one_line 2 'tp=16 does not divide the 8 key/value heads' "tp beyond the key/value heads is refused" -- \
  --model llama3.1-8b --gen 16 --strategy tp=16
expect_one_line 2 'a serving replica runs its batch as one iteration' "--gen with mbs= is refused" -- \
  --model llama3.1-8b --gen 16 --batch 8 --strategy tp=2,mbs=2
expect_one_line 2 'not a multiple of dp=3' "--batch not split by dp is refused" -- \
  --model llama3.1-8b --gen 16 --batch 8 --strategy dp=3

# The engine's kernels (--engine, what reproduce --table serving builds): one
# Llama layer's nodes as --per-op lists them, in order (NODE:OP)
layer0 () { awk -F, '$4 == 0 { sub(/^layers_0_/, "", $2); printf "%s%s:%s", n++ ? " " : "", $2, $3 }' "$TMP/out"; }
run_pm --gpu h100 --model llama3.1-8b --batch 2 --seq 128 --per-op --format csv --engine
got=$(layer0)
want="input_layernorm:VECln self_attn_qkv_proj:Linear rope_kv_cache_write:VECmul core_attention:ATTENTION self_attn_o_proj:Linear post_attention_layernorm:VECln mlp_gate_up_proj:Linear mlp_act_and_mul:VECsilu mlp_down_proj:Linear"
ok $([ "$rc" -eq 0 ] && [ "$got" = "$want" ] && echo 0 || echo 1) \
  "--engine: a Llama layer is 9 kernels: one norm per norm (the residual adds in them), one QKV GEMM, rope with the cache write, attention, o_proj, one gate/up GEMM, one act-and-mul, down"
[ "$got" = "$want" ] || diag "got: $got"
# the bytes of the fused kernels: each add+RMSNorm reads x and the residual and
# writes y and the sum (4 x t x d), rope reads and writes q, k, v (2 x t x 48 x 128),
# act-and-mul reads 2f and writes f (3 x t x f); t = 256 tokens, 32 layers, bf16
run_pm graph --gpu h100 --model llama3.1-8b --batch 2 --seq 128 --engine
ln=$(awk '$1 == "LN" { print $6 }' "$TMP/out")
ew=$(awk '$1 == "EW" { print $6 }' "$TMP/out")
fc=$(awk '$1 == "FC" { print $4 }' "$TMP/out")
ok $(awk -v ln="$ln" -v ew="$ew" -v fc="$fc" 'BEGIN { exit !(ln == 0.545 && ew == 0.906 && fc == 129) }'; echo $?) \
  "--engine: the norms move 65 x 4 x 256 x 4096 x 2 B = 0.545 GB ($ln), rope and act-and-mul 0.906 GB ($ew), 4 GEMMs per layer + lm_head ($fc)"
run_pm --gpu h100 --model qwen3-32b --batch 2 --seq 128 --per-op --format csv --engine
got=$(layer0)
ok $(echo "$got" | awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /:VECln$/) ln++; if ($i ~ /_pow:|_rsqrt:|_neg:|_cat:|^add_/) bad++ } exit !(NF == 11 && ln == 4 && bad == 0 && $3 == "self_attn_q_norm:VECln" && $4 == "self_attn_k_norm:VECln") }'; echo $?) \
  "--engine: Qwen3's q_norm and k_norm are one kernel each, 11 kernels a layer ($got)"
run_pm --gpu h100 --model qwen3-30b-a3b --batch 1 --seq 128 --gen 16 --strategy tp=2 --engine --explain --predictor roofline
# the reached experts as one grouped GEMM (their weights side by side): at batch 1
# the decode reaches top_k = 8 of the 128 experts, the 128-token prefill all of them, so
# the memory-bound decode reads 8/128 of the prefill's expert weights
n=$(awk '/one decode step/ { f = 1 } f && $1 ~ /_expert_[0-9]+_/ { n++ } END { print n + 0 }' "$TMP/out")
g=$(awk '/one decode step/ { f = 1 } f && $1 ~ /_gather$|_scatter$|_pow$|_q_proj$/ { n++ } END { print n + 0 }' "$TMP/out")
r=$(awk '$1 == "layers_0_experts_gate_up_proj" && $2 == "Linear" { v[++n] = $4 } END { if (n == 2) printf "%.4f", v[2] / v[1] }' "$TMP/out")
ok $([ "$rc" -eq 0 ] && [ "$n" -eq 0 ] && [ "$g" -eq 0 ] && grep -q 'layers_0_moe_sum' "$TMP/out" &&
     awk -v r="$r" 'BEGIN { exit !(r > 0.055 && r < 0.07) }' && echo 0 || echo 1) \
  "--engine --explain: a Qwen3-MoE layer's experts as one grouped GEMM, decode/prefill = $r (8/128 of the weights), no per-expert kernels, no gather or scatter copies, one weighted sum"
# the eager graph (no --engine) is what it was: Hugging Face's modules kernel for kernel
run_pm --gpu h100 --model llama3.1-8b --batch 2 --seq 128 --per-op --format csv
got=$(layer0)
ok $(echo "$got" | awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /^input_layernorm_/) n++; if ($i ~ /^self_attn_[qkv]_proj:/) q++; if ($i ~ /^rope_[qk]_/) r++ } exit !(NF == 37 && n == 6 && q == 3 && r == 10 && $NF == "add_2:VECadd") }'; echo $?) \
  "without --engine a Llama layer is the eager one's 37 kernels (RMSNorm in 6, q/k/v apart, rope in 5 per q and k, the adds)"
run_pm --gpu h100 --model llama3.1-8b --batch 2 --seq 128 --format csv --predictor roofline
ok $(awk -F, 'NR == 2 { f = 1; exit !($2 == "5.98554197") } END { if (!f) exit 1 }' "$TMP/out"; echo $?) \
  "without --engine the roofline's Llama-3.1-8B prefill is 5.98554197 ms, as before the engine's kernels"
run_pm --gpu h100 --model llama3.1-8b --batch 2 --seq 128 --format csv --engine --predictor roofline
ok $(awk -F, 'NR == 2 { f = 1; exit !($2 > 0 && $2 < 5.98554197) } END { if (!f) exit 1 }' "$TMP/out"; echo $?) \
  "with --engine the prefill is cheaper (fewer bytes; the logits of the last tokens only)"
expect_fail 2 'inference only' "--engine with training refused" -- --model llama3.1-8b --mode train --engine --batch 1 --seq 128
expect_fail 2 'engine with kernels=te' "--engine with kernels=te (Transformer Engine's own fusions) refused" -- \
  --model llama3.1-8b --gen 16 --batch 4 --seq 128 --strategy tp=2,kernels=te --engine
expect_fail 2 'engine with --opgraph' "--engine with a traced --opgraph refused" -- \
  --opgraph "$top_srcdir/tests/fuzz/opgraph/bert-large-inf-head.csv" --gpu h100 --engine
expect_fail 2 'etp=4 with kernels=te' "etp with kernels=te (Megatron-Core's training MoE layer) refused" -- \
  --model mixtral-8x7b --batch 1 --seq 128 --gen 16 --strategy tp=8,ep=2,etp=4,kernels=te


# The engine's own tp all-reduce (gpus.d engine_ar<N>_*, doc/serving.md).
# arms PHASE FILE: the per-copy ms of the layers' tp all-reduce in --explain's prefill (1)
# or decode (2) graph
arms () {
  awk -v want="$1" '/pipeline stage 0 of 1:/ { ph++ } ph == want && $1 == "layers_0_tp_allreduce_fw" { print $4; exit }' "$2"
}
ar_run () {  # ar_run FILE ARGS...: --explain of llama3.1-8b, batch 4 x 256 tokens, tp=2
  f=$1
  shift
  "$PERFMOD" --model llama3.1-8b --gen 16 --batch 4 --seq 256 --strategy tp=2 --explain "$@" > "$TMP/$f" 2> "$TMP/$f.err"
}
ar_run ar_eng --gpu h100 --engine
ar_run ar_nccl --gpu h100
ar_run ar_h200e --gpu h200-sxm --engine
ar_run ar_h200 --gpu h200-sxm
us=$(gpu_key NVIDIA_H100_80GB_HBM3 engine_ar2_oneshot_us)
gbps=$(gpu_key NVIDIA_H100_80GB_HBM3 engine_ar2_oneshot_gbps)
sw=$(gpu_key NVIDIA_H100_80GB_HBM3 engine_ar2_twoshot_bytes)
# a decode step's all-reduce: 4 tokens x 4096 x 2 bytes (bf16), one-shot
dec=$(arms 2 "$TMP/ar_eng") decn=$(arms 2 "$TMP/ar_nccl")
ok $(awk -v e="$dec" -v n="$decn" -v us="$us" -v g="$gbps" -v sw="$sw" 'BEGIN {
       b = 4 * 4096 * 2; want = (us + b / (g * 1e3)) / 1e3
       exit !(us > 0 && g > 0 && b < sw && e + 0 > 0 && (e - want < 2e-6 && want - e < 2e-6) && e < n) }'; echo $?) \
  "--engine: a decode step's all-reduce (32 KB over 2 H100) is gpus.d's one-shot $us us + bytes / $gbps GB/s ($dec ms), below NCCL's model ($decn ms)"
ok $(grep -q "the tp all-reduce: the engine's own one-shot/two-shot kernel over 2 GPUs" "$TMP/ar_eng" &&
     ! grep -q "the tp all-reduce" "$TMP/ar_nccl"; echo $?) \
  "the assumed: line names the engine's all-reduce with --engine, nothing without"
# the prefill's: 4 x 256 tokens x 4096 x 2 bytes = 8 MB: the cheaper of the engine's one-shot
# kernel and NCCL's model
pre=$(arms 1 "$TMP/ar_eng") pren=$(arms 1 "$TMP/ar_nccl")
ok $(awk -v e="$pre" -v n="$pren" -v us="$us" -v g="$gbps" -v sw="$sw" 'BEGIN {
       b = 4 * 256 * 4096 * 2; eng = (us + b / (g * 1e3)) / 1e3; want = eng < n ? eng : n
       exit !(n + 0 > 0 && b < sw && e - want < 2e-6 && want - e < 2e-6) }'; echo $?) \
  "--engine: a prefill's 8 MB all-reduce, the cheaper of the engine's kernel and NCCL's model ($pre ms; NCCL $pren ms)"
# NCCL's model by hand (physics.h): over 2 GPUs of the node a 32 KB all-reduce runs the ring's
# LL protocol, 6.6 + 2 x 0.6 us, 2 (n-1)/n of the buffer at a quarter of link_gbps x link_efficiency
lg=$(gpu_key NVIDIA_H100_80GB_HBM3 link_gbps) le=$(gpu_key defaults link_efficiency)
ok $(awk -v n="$decn" -v lg="$lg" -v le="$le" 'BEGIN {
       b = 4 * 4096 * 2; want = (7.8 + b / (lg * le / 4 * 1e3)) / 1e3
       exit !(lg > 0 && le > 0 && n - want < 2e-6 && want - n < 2e-6) }'; echo $?) \
  "without --engine the decode all-reduce is NCCL's model: LL, 7.8 us + 32 KB / ($lg GB/s x $le / 4) ($decn ms)"
ok $(awk -v a="$(arms 2 "$TMP/ar_h200e")" -v b="$(arms 2 "$TMP/ar_h200")" 'BEGIN { exit !(a + 0 > 0 && a == b) }' &&
     [ -z "$(gpu_key h200-sxm engine_ar2_oneshot_us)" ] &&
     grep -q "the tp all-reduce: NCCL's (gpus.d \[h200-sxm\] has no engine all-reduce for 2 GPUs)" "$TMP/ar_h200e"; echo $?) \
  "a GPU without engine_ar keys (h200-sxm) keeps NCCL's model under --engine, and says so"

finish
