#!/bin/sh
# t0805-hf-families.sh: Hugging Face configs of Qwen2/3 (+MoE), DeepSeek-V2/V3, gpt-oss, Gemma 1/2/3 and GPT-NeoX: built-ins against published parameter counts, graphs, sliding windows, MLA's cache, training and inference runs, refusals.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 56

MODELS="qwen2-7b qwen3-8b qwen3-32b qwen3-30b-a3b qwen3-235b-a22b deepseek-v2-lite deepseek-v3
gpt-oss-20b gpt-oss-120b gemma-7b gemma2-9b gemma3-27b gpt-neox-20b glm-4.5-air llama3.1-405b glm-4.5 minimax-m2"
MOES="qwen3-30b-a3b qwen3-235b-a22b deepseek-v2-lite deepseek-v3 gpt-oss-20b gpt-oss-120b glm-4.5-air glm-4.5 minimax-m2"
cfg () { echo "$top_srcdir/models/$1.json"; }
field () { sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p" "$(cfg "$1")" | head -1; }

# --- the built-ins and their published parameter counts ---
run_pm models
cp "$TMP/out" "$TMP/models"
rc=0
for m in $MODELS; do
  grep -q "^$m " "$TMP/out" || { diag "missing $m"; rc=1; }
done
ok $rc "perfmod models lists the seventeen new built-ins"

# Published totals and active parameters (B), from the model cards and
# reports: Qwen2 and Qwen3 model cards (7.6; 8.2; 32.8; 30.5/3.3; 235/22),
# the DeepSeek-V2 paper (Lite 15.7/2.4), the DeepSeek-V3 report (671/37, the
# main model without its 14B MTP module), OpenAI's gpt-oss model card
# (116.83/5.13, 20.91/3.61), the Gemma reports (7B 8.54 = 786M embedding +
# 7751M; Gemma 2 9B 9.24 = 917M + 8324M; Gemma 3 27B 27.02 = 1416M + 25600M,
# its 417M vision encoder left out), the GPT-NeoX-20B paper (20.55) and the
# GLM-4.5 report (GLM-4.5: 355/32, Air: 106/12, without the MTP layer), Meta's Llama 3.1 model card
# (405B), MiniMax-M2's model card (230/10, its MTP modules not built).
# Qwen count the embedding in the active parameters; DeepSeek and OpenAI
# leave the input embedding out, GLM both embeddings (column "emb": how many
# vocab x hidden to subtract from perfmod's active count, which holds every
# weight a token uses).  Tolerance: 2% plus half the last published digit.
cat >"$TMP/published" <<'EOT'
qwen2-7b 7.6 - 0.1 0
qwen3-8b 8.2 - 0.1 0
qwen3-32b 32.8 - 0.1 0
qwen3-30b-a3b 30.5 3.3 0.1 0
qwen3-235b-a22b 235 22 1 0
deepseek-v2-lite 15.7 2.4 0.1 1
deepseek-v3 671 37 1 1
gpt-oss-20b 20.91 3.61 0.01 1
gpt-oss-120b 116.83 5.13 0.01 1
gemma-7b 8.54 - 0.01 0
gemma2-9b 9.24 - 0.01 0
gemma3-27b 27.02 - 0.01 0
gpt-neox-20b 20.55 - 0.01 0
glm-4.5-air 106 12 1 2
glm-4.5 355 32 1 2
minimax-m2 230 10 1 2
llama3.1-405b 405 - 1 0
EOT
while read -r m total active unit emb; do
  set -- $(awk -v m="$m" '$1==m{print $(NF-1), $NF}' "$TMP/out")
  a=$1 p=$2
  [ "$emb" != 0 ] && a=$(awk -v a="$a" -v v="$(field "$m" vocab_size)" -v h="$(field "$m" hidden_size)" \
                          -v e="$emb" 'BEGIN{printf "%.0f", a - e*v*h}')
  echo "$m $total $p $active $a $unit"
done <"$TMP/published" >"$TMP/counts"
diag "$(cat "$TMP/counts")"
near='function near(x, pub, unit) { d = x/1e9 - pub; if (d < 0) d = -d; return d <= 0.02*pub + unit/2 }'
ok $(awk "$near"' { if (!near($3, $2, $6)) { print "total", $1 > "/dev/stderr"; bad++ } }
     END { print (NR == 17 && !bad) ? 0 : 1 }' "$TMP/counts") \
  "total parameters of the 17 built-ins within 2% of the published"
ok $(awk "$near"' $4 != "-" { n++; if (!near($5, $4, $6)) { print "active", $1 > "/dev/stderr"; bad++ } }
     END { print (n == 9 && !bad) ? 0 : 1 }' "$TMP/counts") \
  "active parameters of the 9 MoEs within 2% of the published (each source's convention)"
ok $(awk '$4 == "-" && $3 != $5 { bad++ } END { print bad ? 1 : 0 }' "$TMP/counts") \
  "dense models: active equals total"

# Llama-3.1-405B's 126 layers over pp=16 as Meta ran them: refused evenly with the split to
# give, then run with Megatron-Core's first and last stages one layer short
L405="--model llama3.1-405b --gpu h100 --mode train --batch 2048 --seq 8192 --nodes 2048"
expect_one_line 2 "pp=16 does not divide the 126 layers: give each stage its layers, split=7:8:8:8:8:8:8:8:8:8:8:8:8:8:8:7 for one" \
  "llama3.1-405b over pp=16: refused with the split that fits" -- $L405 --strategy tp=8,pp=16,dp=128
run_pm $L405 --strategy tp=8,pp=16,dp=128,sp=1,first_layers=7,last_layers=7 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.strategy.gpus == 16384 and .predictions[0].step_ms > 0' "$TMP/out" >/dev/null; echo $?) \
  "llama3.1-405b on 16,384 H100 (tp=8, pp=16, dp=128, first and last stages of 7 layers): predicted"

# Two more configs, not built-ins: Qwen1.5-MoE-A2.7B (qwen2_moe, its shared
# expert gated; model card: 14.3B total, 2.7B activated, embeddings in) and
# DeepSeek-V2 (q_lora_rank 1536, 160 experts; paper: 236B total, 21B
# activated, without the input embedding), as their config.json files say.
mkdir -p "$TMP/d/models"
cat >"$TMP/d/models/qwen1.5-moe-a2.7b.json" <<'EOT'
{"architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
 "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
 "intermediate_size": 5632, "max_position_embeddings": 8192, "max_window_layers": 21,
 "model_type": "qwen2_moe", "num_attention_heads": 16, "num_hidden_layers": 24,
 "num_key_value_heads": 16, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
 "sliding_window": 32768, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "use_cache": true, "use_sliding_window": false, "vocab_size": 151936, "decoder_sparse_step": 1,
 "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
 "num_experts_per_tok": 4, "num_experts": 60, "norm_topk_prob": false,
 "output_router_logits": false, "router_aux_loss_coef": 0.001}
EOT
cat >"$TMP/d/models/deepseek-v2.json" <<'EOT'
{"architectures": ["DeepseekV2ForCausalLM"], "attention_bias": false, "aux_loss_alpha": 0.001,
 "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 5120,
 "intermediate_size": 12288, "kv_lora_rank": 512, "max_position_embeddings": 163840,
 "model_type": "deepseek_v2", "moe_intermediate_size": 1536, "moe_layer_freq": 1,
 "n_group": 8, "n_routed_experts": 160, "n_shared_experts": 2, "norm_topk_prob": false,
 "num_attention_heads": 128, "num_experts_per_tok": 6, "num_hidden_layers": 60,
 "num_key_value_heads": 128, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
 "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
 "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                  "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "type": "yarn"},
 "rope_theta": 10000, "routed_scaling_factor": 16.0, "scoring_func": "softmax",
 "tie_word_embeddings": false, "topk_group": 3, "topk_method": "group_limited_greedy",
 "v_head_dim": 128, "vocab_size": 102400}
EOT
PERFMOD_DATADIR="$TMP/d" "$PERFMOD" models >"$TMP/more" 2>&1
diag "$(cat "$TMP/more")"
ok $(awk "$near"' $1 == "qwen1.5-moe-a2.7b" && near($NF, 14.3, 0.1) && near($(NF-1), 2.7, 0.1) {a++}
     $1 == "deepseek-v2" && near($NF, 236, 1) && near($(NF-1) - 102400*5120, 21, 1) {a++}
     END {print a == 2 ? 0 : 1}' "$TMP/more") \
  "Qwen1.5-MoE-A2.7B (shared expert) and DeepSeek-V2 (q_lora_rank) configs match their published counts"
# Kimi K2 (model_type kimi_k2, DeepSeek-V3's architecture): 61 layers, the first dense;
# per layer MLA's projections and two norms; 384 experts of 2048 and a shared one, the
# router with its expert bias; untied embeddings: the count by hand, and the report's
# rounded 1 trillion and 32 billion activated within 3 %
run_pm models --model kimi-k2
ok $([ "$rc" -eq 0 ] && awk 'NR == 2 && $2 == "kimi_k2" {
       d = 7168; ql = 1536; h = 64; kvl = 512; r = 64; E = 384; V = 163840; m = 2048
       att = d * ql + ql + ql * h * 192 + d * (kvl + r) + kvl + kvl * h * 256 + h * 128 * d + 2 * d
       tot = 61 * att + 3 * d * 18432 + 60 * (E * 3 * d * m + 3 * d * m + d * E + E) + 2 * V * d + d
       act = 61 * att + 3 * d * 18432 + 60 * (9 * 3 * d * m + d * E + E) + 2 * V * d + d
       f = $NF == tot && $(NF-1) == act && ($NF / 1e12 - 1)^2 < 0.0009 && ($(NF-1) / 32e9 - 1)^2 < 0.0009 }
     END { exit !f }' "$TMP/out"; echo $?) "Kimi K2 loads as DeepSeek-V3's architecture: its parameters by hand, the published 1T / 32B"
# MiniMax-M2 (model_type minimax_m2): 62 layers of grouped-query attention (48 heads of 128,
# 8 KV heads, q/k norms of a head's 128 each), every MLP 256 experts of 1536 with the
# router's bias, untied embeddings: by hand (per-layer q/k norms would add 6,912 a layer)
run_pm models --model minimax-m2
ok $([ "$rc" -eq 0 ] && awk 'NR == 2 && $2 == "minimax_m2" {
       d = 3072; q = 48 * 128; kv = 8 * 128; E = 256; m = 1536; V = 200064
       att = d * q + 2 * d * kv + q * d + 2 * 128 + 2 * d
       tot = 62 * (att + E * 3 * d * m + d * E + E) + 2 * V * d + d
       act = 62 * (att + 8 * 3 * d * m + d * E + E) + 2 * V * d + d
       f = $NF == tot && $(NF-1) == act }
     END { exit !f }' "$TMP/out"; echo $?) "MiniMax-M2 (minimax_m2): its parameters by hand"
sed 's/"shared_intermediate_size": 0/"shared_intermediate_size": 1024/' "$top_srcdir/models/minimax-m2.json" >"$TMP/mm2-shared.json"
expect_one_line 2 "mm2-shared.json: key 'shared_intermediate_size': MiniMax-M2's shared expert is not modelled" \
  "a MiniMax-M2 config with a shared expert: refused with file and key" -- models --model "$TMP/mm2-shared.json"
sed 's/"rotary_dim": 64/"rotary_dim": 256/' "$top_srcdir/models/minimax-m2.json" >"$TMP/mm2-rope.json"
expect_one_line 2 "mm2-rope.json: key 'rotary_dim': exceeds the head's dimension" \
  "a MiniMax-M2 rotary_dim beyond the head: refused with file and key" -- models --model "$TMP/mm2-rope.json"
# DeepSeek-V2's group-limited routing with more groups chosen than it has: refused, naming
# the file and the key
sed 's/"topk_group": 3/"topk_group": 9/' "$TMP/d/models/deepseek-v2.json" >"$TMP/dsv2-bad.json"
expect_one_line 2 "dsv2-bad.json: key 'topk_group': needs 1 to n_group groups" \
  "a DeepSeek config choosing more routing groups than n_group: refused with file and key" -- \
  --model "$TMP/dsv2-bad.json" --gpu h100 --gen 8 --batch 2 --seq 512

# --- each loads from a config.json path as it does by name ---
rc=0
for m in $MODELS; do
  mkdir -p "$TMP/$m" && cp "$(cfg "$m")" "$TMP/$m/config.json"
  a=$("$PERFMOD" --model "$m" --gpu h100 --gen 8 --batch 2 --seq 512 --format csv 2>/dev/null | awk -F, 'NR==2{print $2, $8}')
  b=$("$PERFMOD" --model "$TMP/$m/config.json" --gpu h100 --gen 8 --batch 2 --seq 512 --format csv 2>/dev/null |
      awk -F, 'NR==2{print $2, $8}')
  [ -n "$a" ] && [ "$a" = "$b" ] || { diag "$m: built-in '$a', path '$b'"; rc=1; }
done
ok $rc "every family predicts the same from its config.json path as from the built-in"

# --- training and inference on an H100 (roofline), single GPU and sharded ---
rc=0
for m in $MODELS; do
  for mode in "--mode train --batch 4 --seq 2048" "--gen 64 --batch 4 --seq 1024"; do
    run_pm --model "$m" --gpu h100 --predictor roofline $mode --format csv
    awk -F, 'NR==2 && $2 > 0 {f=1} END{exit !f}' "$TMP/out" && [ "$rc" -eq 0 ] ||
      { diag "$m $mode: exit $rc $(head -2 "$TMP/err")"; rc=1; }
  done
done
ok $rc "training steps and --gen runs predicted for every built-in"
rc=0
for m in $MOES; do
  for st in tp=8 dp=8,ep=8 tp=8,ep=8,sp=1,etp=1; do
    run_pm --model "$m" --gpu h100 --predictor roofline --mode train --batch 64 --seq 2048 \
      --strategy "$st" --format csv
    awk -F, 'NR==2 && $2 > 0 {f=1} END{exit !f}' "$TMP/out" && [ "$rc" -eq 0 ] ||
      { diag "$m $st: exit $rc $(head -2 "$TMP/err")"; rc=1; }
  done
done
ok $rc "the MoEs train under tp=8, ep=8 and both"
rc=0
for m in qwen3-8b gemma2-9b gpt-neox-20b; do
  run_pm --model "$m" --gpu h100 --mode train --batch 64 --seq 2048 --strategy tp=8 --format csv
  [ "$rc" -eq 0 ] || { diag "$m: $(cat "$TMP/err")"; rc=1; }
done
ok $rc "dense models train under tp=8"
# gpt-oss-20b has 24 layers: pp=4 stages, each a sliding and a full kind
run_pm --model gpt-oss-20b --gpu h100 --mode train --batch 64 --seq 2048 --strategy tp=2,pp=4,dp=1 --format csv
ok $rc "gpt-oss-20b trains under tp=2, pp=4"
# Megatron-Core's layer for Qwen3-MoE (the default for its mixed-precision training): the
# q and k heads' norms (32 and 4 heads of 512 tokens, 128 wide) and the routed experts' grouped
# GEMMs, 512 x 8 assignments over the 128 experts, 32 tokens each, gate and up 2 x 768 wide,
# one expert built and counted 48 layers x 128 times
run_pm graph --model qwen3-30b-a3b --mode train --batch 1 --seq 512 --format csv
ok $([ "$rc" -eq 0 ] && awk -F, '$5 == "fw" && $1 == "decoder_layers_0_q_layernorm" && $8 == 16384 && $12 == 128 { q++ }
       $5 == "fw" && $1 == "decoder_layers_0_k_layernorm" && $8 == 2048 && $12 == 128 { k++ }
       $5 == "fw" && $1 == "decoder_layers_0_experts_fc1" && $4 == 6144 && $9 == 32 && $10 == 2048 && $11 == 1536 { e++ }
       END { exit !(q == 1 && k == 1 && e == 1) }' "$TMP/out"; echo $?) \
  "qwen3-30b-a3b trains in Megatron-Core's layer: q/k head norms, 128 experts of 32 tokens, 2 x 768 wide"
expect_one_line 2 "kernels=te: Megatron-Core's layer is modelled for GPT, Llama, Mixtral, Qwen2/3 and their MoEs, DeepSeek-V2/V3 and gpt-oss \(model_type gemma2 is not\)" \
  "kernels=te refused for a family without Megatron-Core's layer, naming both" -- \
  --model gemma2-9b --gpu h100 --mode train --strategy tp=1,kernels=te

# --- the graph: forward matrix FLOPs of a prefill are 2 x tokens x the weights
# a token uses (the active parameters less the input embedding, norms and
# biases: below 0.5%); 4096 tokens reach every expert evenly ---
rc=0
for m in qwen3-30b-a3b deepseek-v2-lite deepseek-v3 gpt-oss-120b qwen2-7b gpt-neox-20b; do
  run_pm models
  a=$(awk -v m="$m" '$1==m{print $(NF-1)}' "$TMP/out")
  run_pm graph --model "$m" --batch 1 --seq 4096 --mode inf --format csv --dtype bf16
  f=$(awk -F, 'NR>1 && $6=="FC" && $5=="fw" {f += $4*$13} END{printf "%.0f", f}' "$TMP/out")
  r=$(awk -v f="$f" -v a="$a" -v v="$(field "$m" vocab_size)" -v h="$(field "$m" hidden_size)" \
      'BEGIN{print f / (2*4096*(a - v*h))}')
  awk -v r="$r" 'BEGIN{exit !(r > 0.995 && r < 1.005)}' || { diag "$m: FLOPs / 2 T N = $r"; rc=1; }
done
ok $rc "prefill linear FLOPs = 2 x tokens x active weights (MoE, MLA, NeoX, Qwen2) within 0.5%"

# dense-first layers and mlp_only_layers: the routed layers counted as such
run_pm graph --model deepseek-v3 --batch 1 --seq 64 --mode inf --format csv --dtype bf16
ok $(awk -F, 'NR>1 && $1 ~ /_router$/ {r += $4} NR>1 && $1 ~ /_mlp_down_proj$/ {d += $4}
     END{print (r == 58 && d == 3) ? 0 : 1}' "$TMP/out") \
  "DeepSeek-V3: 3 dense-first layers, 58 routed (first_k_dense_replace)"
sed 's/"mlp_only_layers": \[\]/"mlp_only_layers": [0, 5, 47]/' "$(cfg qwen3-30b-a3b)" >"$TMP/mlponly.json"
run_pm graph --model "$TMP/mlponly.json" --batch 1 --seq 64 --mode inf --format csv --dtype bf16
ok $(awk -F, 'NR>1 && $1 ~ /_router$/ {r += $4} NR>1 && $1 ~ /_mlp_down_proj$/ {d += $4}
     END{print (r == 45 && d == 3) ? 0 : 1}' "$TMP/out") \
  "Qwen3-MoE: mlp_only_layers [0, 5, 47] are dense"
run_pm graph --model gemma3-27b --batch 1 --seq 64 --mode inf --format csv --dtype bf16
ok $(awk -F, 'NR>1 && $1 ~ /_o_proj$/ {n[$4]++} END{print (n[52] == 1 && n[10] == 1) ? 0 : 1}' "$TMP/out") \
  "Gemma 3: 52 sliding and 10 full layers (five to one over 62)"

# --- sliding windows are used: the same config without its window ---
kv () { sed -n 's/.*"kv_cache": \([0-9.e+-]*\).*/\1/p' "$TMP/out" | head -1; }
tpot () { sed -n 's/.*"tpot_ms": \([0-9.e+-]*\).*/\1/p' "$TMP/out" | head -1; }
ttft () { sed -n 's/.*"ttft_ms": \([0-9.e+-]*\).*/\1/p' "$TMP/out" | head -1; }
sed 's/"sliding_window": 4096/"sliding_window": null/' "$(cfg gemma2-9b)" >"$TMP/gemma2-full.json"
run_pm --model gemma2-9b --gpu h100 --gen 16 --batch 1 --seq 8192 --format json
k1=$(kv) t1=$(tpot) f1=$(ttft)
run_pm --model "$TMP/gemma2-full.json" --gpu h100 --gen 16 --batch 1 --seq 8192 --format json
k2=$(kv) t2=$(tpot) f2=$(ttft)
diag "gemma2-9b kv $k1 / $k2 GiB, tpot $t1 / $t2 ms, ttft $f1 / $f2 ms"
# 21 sliding layers keep 4096 tokens, 21 full ones all 8192 + 16
ok $(awk -v a="$k1" -v b="$k2" 'BEGIN{r = a/b; e = (4096 + 8208) / (2 * 8208); print (r/e > 0.9999 && r/e < 1.0001) ? 0 : 1}') \
  "Gemma 2: the KV cache of its sliding layers is the window's (ratio (4096 + 8208) / 2 x 8208)"
ok $(awk -v a="$t1" -v b="$t2" 'BEGIN{print (a < b) ? 0 : 1}') "Gemma 2: a decode step is cheaper with the window"
ok $(awk -v a="$f1" -v b="$f2" 'BEGIN{print (a < b) ? 0 : 1}') "Gemma 2: a fused-attention prefill is cheaper with the window"
# below the window the window changes nothing
run_pm --model gemma2-9b --gpu h100 --gen 16 --batch 1 --seq 1024 --format json
k1=$(kv) t1=$(tpot)
run_pm --model "$TMP/gemma2-full.json" --gpu h100 --gen 16 --batch 1 --seq 1024 --format json
ok $([ "$k1" = "$(kv)" ] && [ "$t1" = "$(tpot)" ] && echo 0 || echo 1) \
  "Gemma 2: a context shorter than the window predicts as without it"
sed 's/"sliding_attention"/"full_attention"/g' "$(cfg gpt-oss-20b)" >"$TMP/oss-full.json"
run_pm --model gpt-oss-20b --gpu h100 --gen 16 --batch 8 --seq 4096 --format json
k1=$(kv) t1=$(tpot)
run_pm --model "$TMP/oss-full.json" --gpu h100 --gen 16 --batch 8 --seq 4096 --format json
k2=$(kv) t2=$(tpot)
ok $(awk -v a="$k1" -v b="$k2" -v t="$t1" -v u="$t2" \
     'BEGIN{r = a/b; e = (128 + 4112) / (2 * 4112); print (r/e > 0.9999 && r/e < 1.0001 && t < u) ? 0 : 1}') \
  "gpt-oss: 128-token sliding layers (layer_types) shrink the cache and the decode step"
sed 's/"use_sliding_window": false/"use_sliding_window": true/; s/"sliding_window": 131072/"sliding_window": 1024/; s/"max_window_layers": 28/"max_window_layers": 14/' \
  "$(cfg qwen2-7b)" >"$TMP/qwen2-swa.json"
run_pm --model qwen2-7b --gpu h100 --gen 16 --batch 1 --seq 8192 --format json
k2=$(kv)
run_pm --model "$TMP/qwen2-swa.json" --gpu h100 --gen 16 --batch 1 --seq 8192 --format json
ok $(awk -v a="$(kv)" -v b="$k2" 'BEGIN{r = a/b; e = (14*1024 + 14*8208) / (28 * 8208); print (r/e > 0.9999 && r/e < 1.0001) ? 0 : 1}') \
  "Qwen2: use_sliding_window slides the layers from max_window_layers on"

# --- a decode step of one sequence reads the experts it reaches only: the
# weights a token uses (active, less the embedding table it reads one row
# of) at the GPU's memory bandwidth, plus the small KV cache and launches ---
bw=$("$PERFMOD" gpus | awk 'NR==1{for (i=1;i<=NF;i++) if ($i=="mem_gbps") c=i} $1=="NVIDIA_H100_80GB_HBM3"{print $c}')
rc=0
for m in gpt-oss-120b qwen3-235b-a22b deepseek-v3; do
  a=$(awk -v m="$m" '$1==m{print $(NF-1)}' "$TMP/models")
  run_pm --model "$m" --gpu h100 --gen 8 --batch 1 --seq 128 --predictor roofline --format json
  r=$(awk -v t="$(tpot)" -v a="$a" -v bw="$bw" -v v="$(field "$m" vocab_size)" -v h="$(field "$m" hidden_size)" \
      'BEGIN{print t / ((a - v*h) * 2 / (bw * 1e9) * 1e3)}')
  awk -v r="$r" 'BEGIN{exit !(r > 1 && r < 1.15)}' || { diag "$m: tpot / active bytes at $bw GB/s = $r"; rc=1; }
done
ok $rc "MoE decode of one sequence: tpot within 15% above reading the active weights once"

# --- MLA: the cache holds the latent and the rope key per token and layer ---
run_pm --model deepseek-v2-lite --gpu h100 --gen 16 --batch 2 --seq 4096 --format json
ok $(awk -v k="$(kv)" 'BEGIN{e = 2 * 27 * (4096 + 16) * (512 + 64) * 2 / 1073741824; d = k/e - 1; print (d < 1e-6 && d > -1e-6) ? 0 : 1}') \
  "DeepSeek-V2-Lite: KV cache = layers x tokens x (kv_lora_rank + qk_rope_head_dim) x 2 bytes"
run_pm --model deepseek-v3 --gpu h100 --gen 16 --batch 1 --seq 4096 --format json
ok $(awk -v k="$(kv)" 'BEGIN{e = 61 * (4096 + 16) * (512 + 64) * 2 / 1073741824; d = k/e - 1; print (d < 1e-6 && d > -1e-6) ? 0 : 1}') \
  "DeepSeek-V3: the compressed cache, 576 elements per token and layer"
# A decode step's latent attention reads the cache once (keys and values are the latent,
# FlashMLA): 4 sequences x 2 bytes x (q and o, 2 x 16 heads x 576, + 1025 cached tokens x 576)
# over H100's 3430 GB/s; its FLOPs (4 x 4 x 16 x 576 x 1025) are far under the peak's.
run_pm --model deepseek-v2-lite --gpu h100 --gen 2 --batch 4 --seq 1024 --strategy tp=1 --predictor roofline --explain
ok $(awk '/one decode step/ { d = 1 } d && $1 == "layers_1_core_attention" {
       want = 4 * 2 * (2 * 16 * 576 + 1025 * 576) / 3430e9 * 1e3; r = $4 / want - 1
       good = r < 1e-3 && r > -1e-3 } END { exit !good }' "$TMP/out"; echo $?) \
  "DeepSeek-V2-Lite decode: the latent read once, as keys and values (the roofline, by hand)"
# perfmod kernel asks for the same kernel with --latent: 64 sequences of 5128 cached tokens,
# 8 query heads against the 576-wide latent, once
run_pm kernel --op decode --batch 64 --kv-len 5128 --heads 8 --kv-heads 1 --head-dim 576 --latent \
  --gpu h100 --predictor roofline --format csv
ok $(awk -F, 'NR == 2 && $1 == "roofline" { want = 64 * 2 * (2 * 8 * 576 + 5128 * 576) / 3430e9 * 1e3
       r = $5 / want - 1; good = r < 1e-3 && r > -1e-3 } END { exit !good }' "$TMP/out"; echo $?) \
  "kernel --op decode --latent: the latent read once (the roofline, by hand)"
expect_one_line 2 "--latent: a decode step's latent attention" "--latent outside --op decode: refused" -- \
  kernel --op gemm --m 4 --n 4 --k 4 --latent --gpu h100

# --- refusals: exit 2, one line naming the file and the field, nothing on stdout ---
sed 's/"kv_lora_rank": 512/"kv_lora_rank": -512/' "$(cfg deepseek-v2-lite)" >"$TMP/neg.json"
expect_one_line 2 "neg.json: key 'kv_lora_rank' must be an integer" "negative kv_lora_rank refused, naming it" -- \
  --model "$TMP/neg.json" --gpu h100
sed 's/"kv_lora_rank": 512/"kv_lora_rank": 0/' "$(cfg deepseek-v2-lite)" >"$TMP/zero.json"
expect_one_line 2 "zero.json: key 'kv_lora_rank'" "kv_lora_rank 0 refused, naming it" -- --model "$TMP/zero.json" --gpu h100
sed 's/"model_type": "deepseek_v3",/"model_type": "deepseek_v3", "attention_type": "linear",/' "$(cfg deepseek-v3)" >"$TMP/attn.json"
expect_one_line 2 "attn.json: key 'attention_type'" "an unsupported attention_type refused" -- --model "$TMP/attn.json" --gpu h100
sed 's/"sliding_window": 4096,/"sliding_window": 4096.5,/' "$(cfg gemma2-9b)" >"$TMP/win.json"
expect_one_line 2 "win.json: key 'sliding_window' must be an integer" "a non-integer sliding_window refused" -- \
  --model "$TMP/win.json" --gpu h100
sed 's/"model_type": "qwen3"/"model_type": "rwkv7"/' "$(cfg qwen3-8b)" >"$TMP/rwkv.json"
expect_one_line 2 "rwkv.json: model_type 'rwkv7' is not an architecture perfmod builds" \
  "an unknown model_type refused, naming it" -- --model "$TMP/rwkv.json" --gpu h100
# the families of the day whose layers perfmod has no model of: refused by what they have
sed 's/"model_type": "qwen3"/"model_type": "qwen3_next"/' "$(cfg qwen3-8b)" >"$TMP/next.json"
expect_one_line 2 "next.json: model_type 'qwen3_next': perfmod has no model of Qwen3-Next's Gated DeltaNet layers \(linear attention\)" \
  "Qwen3-Next refused, naming its linear attention" -- --model "$TMP/next.json" --gpu h100
sed 's/"model_type": "qwen3"/"model_type": "nemotron_h"/' "$(cfg qwen3-8b)" >"$TMP/nemo.json"
expect_one_line 2 "nemo.json: model_type 'nemotron_h': perfmod has no model of Nemotron-H's Mamba-2 layers" \
  "Nemotron-H refused, naming its Mamba layers" -- --model "$TMP/nemo.json" --gpu h100
sed 's/"model_type": "qwen3"/"model_type": "mamba2"/' "$(cfg qwen3-8b)" >"$TMP/mamba.json"
expect_one_line 2 "mamba.json: model_type 'mamba2': perfmod has no model of Mamba-2's selective state-space scan" \
  "Mamba-2 refused, naming its scan" -- --model "$TMP/mamba.json" --gpu h100
sed '0,/"sliding_attention"/s//"chunked_attention"/' "$(cfg gpt-oss-20b)" >"$TMP/chunked.json"
expect_one_line 2 "chunked.json: key 'layer_types': only full_attention and sliding_attention" \
  "an attention kind perfmod does not model refused (layer_types)" -- --model "$TMP/chunked.json" --gpu h100
sed 's/"mlp_only_layers": \[\]/"mlp_only_layers": [48]/' "$(cfg qwen3-30b-a3b)" >"$TMP/mlp48.json"
expect_one_line 2 "mlp48.json: key 'mlp_only_layers'" "mlp_only_layers beyond the layers refused" -- \
  --model "$TMP/mlp48.json" --gpu h100
sed 's/"decoder_sparse_step": 1/"decoder_sparse_step": 0/' "$(cfg qwen3-30b-a3b)" >"$TMP/step0.json"
expect_one_line 2 "step0.json: key 'decoder_sparse_step'" "decoder_sparse_step 0 refused" -- \
  --model "$TMP/step0.json" --gpu h100
sed 's/"rotary_pct": 0.25/"rotary_pct": 1.5/' "$(cfg gpt-neox-20b)" >"$TMP/rot.json"
expect_one_line 2 "rot.json: key 'rotary_pct'" "rotary_pct beyond 1 refused" -- --model "$TMP/rot.json" --gpu h100
sed 's/"rope_scaling": {/"rope_scaling": 8, "rope_scaling_was": {/' "$(cfg gemma3-27b)" >"$TMP/rope.json"
expect_one_line 2 "rope.json: key 'rope_scaling'" "a rope_scaling that is not an object refused" -- \
  --model "$TMP/rope.json" --gpu h100
# perfmod models --model: one row, for a built-in or a config file; kv_B_tok by hand (bf16:
# Llama-3.1-8B 32 layers x 2 (K, V) x 8 heads x 128 x 2 bytes; DeepSeek-V3 61 x (512 + 64) x 2)
run_pm models --model llama3.1-8b
ok $([ "$rc" -eq 0 ] && [ "$(grep -c . "$TMP/out")" -eq 2 ] &&
     awk 'NR == 2 && $1 == "llama3.1-8b" && $(NF-2) == 32 * 2 * 8 * 128 * 2 && $NF == 8030261248 { f = 1 }
          END { exit !f }' "$TMP/out"; echo $?) \
  "models --model NAME: its row alone, KV bytes per token and parameters by hand"
run_pm models --model "$top_srcdir/models/deepseek-v3.json"
ok $([ "$rc" -eq 0 ] && awk 'NR == 2 && $(NF-2) == 61 * (512 + 64) * 2 { f = 1 } END { exit !f }' "$TMP/out"; echo $?) \
  "models --model FILE: a config file's row (DeepSeek-V3's latent cache, 70,272 bytes a token)"
# the same under CSV's and JSON's names: Kimi K2 by hand (61 layers, 384 experts, top 8, MLA's
# 61 x (512 + 64) x 2 bytes a token), the same numbers as the table's
run_pm models --model kimi-k2 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.models | length == 1 and .[0].model == "kimi-k2" and
     .[0].layers == 61 and .[0].experts == 384 and .[0].top_k == 8 and
     .[0].kv_bytes_per_token == 61 * 576 * 2 and .[0].params > .[0].active_params' "$TMP/out" \
     >/dev/null; echo $?) "models --format json: Kimi K2 under the CSV's names, by hand"
kimi_p=$(jq -r '.models[0].params' "$TMP/out")
run_pm models --format csv
ok $([ "$rc" -eq 0 ] && [ "$(head -1 "$TMP/out")" = \
  model,model_type,layers,hidden,heads,kv_heads,ffn,experts,top_k,kv_bytes_per_token,active_params,params ] &&
  [ "$(grep -c . "$TMP/out")" -eq "$(ls "$top_srcdir"/models/*.json | wc -l | awk '{print $1 + 1}')" ] &&
  awk -F, -v p="$kimi_p" '$1 == "kimi-k2" && $NF == p {f = 1} END {exit !f}' "$TMP/out"; echo $?) \
  "models --format csv: a row per built-in, Kimi K2's parameters as JSON's"
expect_one_line 2 "--format 'xml': expected table, csv or json" "models --format xml is refused" -- \
  models --format xml
# Hugging Face model IDs from the local cache, no network: HF_HOME/hub's snapshot that
# refs/main names; HF_HUB_CACHE; the one snapshot when refs/main is missing; else said
hub="$TMP/hf/hub/models--acme--tiny-8b"
mkdir -p "$hub/snapshots/c0ffee" "$hub/snapshots/0ld" "$hub/refs"
printf 'c0ffee\n' >"$hub/refs/main"
cp "$top_srcdir/models/llama3.1-8b.json" "$hub/snapshots/c0ffee/config.json"
echo '{"model_type": "gpt2"}' >"$hub/snapshots/0ld/config.json"
HF_HOME="$TMP/hf" run_pm models --model acme/tiny-8b
ok $([ "$rc" -eq 0 ] && awk 'NR == 2 && $1 == "acme/tiny-8b" && $2 == "llama" && $NF == 8030261248 { f = 1 } END { exit !f }' "$TMP/out"; echo $?) \
  "--model ORG/NAME: the config.json of the snapshot refs/main names in HF_HOME's cache"
rm "$hub/refs/main" "$hub/snapshots/0ld/config.json" && rmdir "$hub/snapshots/0ld"
HF_HOME=/nonexistent HF_HUB_CACHE="$TMP/hf/hub" run_pm --model acme/tiny-8b --gpu h100 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.model == "acme/tiny-8b" and .layers == 32' "$TMP/out" >/dev/null; echo $?) \
  "HF_HUB_CACHE, no refs/main: the one snapshot predicted, named by its ID"
HF_HOME="$TMP/hf" expect_one_line 2 "--model acme/absent: not a file, and no config.json of it in the Hugging Face cache \\(.*models--acme--absent\\); fetch it with: huggingface-cli download acme/absent config.json" \
  "an ID the cache lacks: said with the folder looked in and how to fetch it" -- models --model acme/absent
finish
