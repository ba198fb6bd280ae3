#!/bin/sh
# t1060-inputs-coverage.sh: config.json keys of the new families (parameter counts by hand, refusals by key), op graph, parameter-file, strategy, search and output-file edge cases.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 105

# ===== Hugging Face config.json: keys of the families after Switch =====
# A tiny base: 4 layers, width 64, 4 heads (2 key/value), ffn 128, vocab 1000.
B='"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
 "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 512'
mk () {  # mk NAME JSON-FIELDS: $TMP/NAME.json
  printf '{%s}\n' "$2" >"$TMP/$1.json"
}
refused () {  # refused NAME KEY-PATTERN DESCRIPTION: the config is refused in one line naming its key
  expect_one_line 2 "$1.json: key '$2" "$3" -- --model "$TMP/$1.json"
}

# --- parameter counts of the seven families, derived here from the dimensions as
# Hugging Face's modules hold them (d width, h heads, kv key/value heads, dh head
# width, f ffn, v vocab, L layers; untied heads add v x d, a final norm d).
mkdir -p "$TMP/d/models"
M="$TMP/d/models"
printf '{"model_type": "qwen2", %s}\n' "$B" >"$M/c-qwen2.json"
printf '{"model_type": "qwen3", %s, "head_dim": 32, "attention_bias": true}\n' "$B" >"$M/c-qwen3b.json"
printf '{"model_type": "qwen2_moe", %s, "num_experts": 4, "num_experts_per_tok": 2,
 "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, "decoder_sparse_step": 2,
 "mlp_only_layers": [3]}\n' "$B" >"$M/c-qmoe.json"
printf '{"model_type": "deepseek_v3", %s, "n_routed_experts": 4, "num_experts_per_tok": 2,
 "moe_intermediate_size": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
 "v_head_dim": 16, "n_shared_experts": 1, "first_k_dense_replace": 1, "moe_layer_freq": 2,
 "attention_type": "mla", "q_lora_rank": null}\n' "$B" >"$M/c-ds.json"
printf '{"model_type": "deepseek_v3", %s, "n_routed_experts": 4, "num_experts_per_tok": 2,
 "moe_intermediate_size": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
 "v_head_dim": 16, "n_shared_experts": 1, "first_k_dense_replace": 4, "q_lora_rank": 8,
 "attention_bias": true}\n' "$B" >"$M/c-dsb.json"
printf '{"model_type": "gemma3_text", %s, "head_dim": 32, "sliding_window": 64,
 "sliding_window_pattern": 2}\n' "$B" >"$M/c-gemma3.json"
printf '{"model_type": "gpt_neox", %s, "num_key_value_heads": null, "attention_bias": false,
 "use_parallel_residual": false, "rotary_pct": 0.5, "head_dim": 16}\n' "$B" >"$M/c-neox.json"
printf '{"model_type": "gpt_oss", %s, "num_local_experts": 4, "experts_per_token": 2,
 "head_dim": 16, "sliding_window": 32}\n' "$B" >"$M/c-oss.json"
PERFMOD_DATADIR="$TMP/d" "$PERFMOD" models >"$TMP/models" 2>"$TMP/err"
diag "$(cat "$TMP/models")"
count () {  # count MODEL EXPECTED-TOTAL [EXPECTED-ACTIVE] DESCRIPTION
  awk -v m="$1" -v t="$2" -v a="$3" '$1 == m && $NF == t && $(NF-1) == a { f = 1 } END { exit !f }' \
    "$TMP/models"
  ok $? "$4"
}
# qwen2: q, k, v, o with q/k/v biases (dh = 64/4 = 16), two RMSNorms, a gated MLP
count c-qwen2 "$(awk 'BEGIN { d=64; h=4; kv=2; dh=16; f=128; v=1000; L=4
  l = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + 2*d + 3*d*f; print 2*v*d + L*l + d }')" \
  "$(awk 'BEGIN { d=64; h=4; kv=2; dh=16; f=128; v=1000; L=4
  l = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + 2*d + 3*d*f; print 2*v*d + L*l + d }')" \
  "qwen2: parameters counted with q/k/v biases, as Hugging Face's Qwen2 holds them"
# qwen3 with attention_bias: q/k/v and o biases, q/k norms of dh = 32
count c-qwen3b "$(awk 'BEGIN { d=64; h=4; kv=2; dh=32; f=128; v=1000; L=4
  l = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + d + 2*dh + 2*d + 3*d*f; print 2*v*d + L*l + d }')" \
  "$(awk 'BEGIN { d=64; h=4; kv=2; dh=32; f=128; v=1000; L=4
  l = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + d + 2*dh + 2*d + 3*d*f; print 2*v*d + L*l + d }')" \
  "qwen3: attention_bias adds q/k/v and output biases, head_dim 32 its q/k norms"
# qwen2_moe: decoder_sparse_step 2 makes layers 1 and 3 sparse, mlp_only_layers [3]
# leaves layer 1: its router, 4 experts of 3 x d x 32, a gated shared expert of 64
count c-qmoe "$(awk 'BEGIN { d=64; h=4; kv=2; dh=16; f=128; v=1000; e=4; fe=32; fs=64
  a = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + 2*d
  print 2*v*d + 3*(a + 3*d*f) + (a + d*e + e*3*d*fe + 3*d*fs + d) + d }')" \
  "$(awk 'BEGIN { d=64; h=4; kv=2; dh=16; f=128; v=1000; e=4; fe=32; fs=64
  a = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + 2*d
  print 2*v*d + 3*(a + 3*d*f) + (a + d*e + 2*3*d*fe + 3*d*fs + d) + d }')" \
  "qwen2_moe: decoder_sparse_step and mlp_only_layers leave one sparse layer (total and active)"
# deepseek_v3: latent attention without q_lora_rank; first_k_dense_replace 1 and
# moe_layer_freq 2 leave layer 2 sparse: router with its correction bias, 4 experts, one shared
count c-ds "$(awk 'BEGIN { d=64; h=4; f=128; v=1000; e=4; fe=32; kvl=16; no=16; ro=8; vd=16
  a = d*h*(no+ro) + d*(kvl+ro) + kvl + kvl*h*(no+vd) + h*vd*d + 2*d
  print 2*v*d + 3*(a + 3*d*f) + (a + d*e + e + e*3*d*fe + 3*d*fe) + d }')" \
  "$(awk 'BEGIN { d=64; h=4; f=128; v=1000; e=4; fe=32; kvl=16; no=16; ro=8; vd=16
  a = d*h*(no+ro) + d*(kvl+ro) + kvl + kvl*h*(no+vd) + h*vd*d + 2*d
  print 2*v*d + 3*(a + 3*d*f) + (a + d*e + e + 2*3*d*fe + 3*d*fe) + d }')" \
  "deepseek_v3: latent attention, first_k_dense_replace and moe_layer_freq counted (total and active)"
# deepseek_v3 with q_lora_rank 8 and attention_bias (every layer dense): Hugging Face's
# DeepseekV3Attention biases q_a_proj, kv_a_proj_with_mqa and o_proj, not the up-projections
count c-dsb "$(awk 'BEGIN { d=64; h=4; f=128; v=1000; ql=8; kvl=16; no=16; ro=8; vd=16
  a = d*ql + ql + ql + ql*h*(no+ro) + d*(kvl+ro) + (kvl+ro) + kvl + kvl*h*(no+vd) + h*vd*d + d + 2*d
  print 2*v*d + 4*(a + 3*d*f) + d }')" \
  "$(awk 'BEGIN { d=64; h=4; f=128; v=1000; ql=8; kvl=16; no=16; ro=8; vd=16
  a = d*ql + ql + ql + ql*h*(no+ro) + d*(kvl+ro) + (kvl+ro) + kvl + kvl*h*(no+vd) + h*vd*d + d + 2*d
  print 2*v*d + 4*(a + 3*d*f) + d }')" \
  "deepseek_v3 with attention_bias: q_a, kv_a and output biases counted, as Hugging Face holds them"
# gemma3: tied embedding, four norms a layer, q/k norms, a gated GELU
count c-gemma3 "$(awk 'BEGIN { d=64; h=4; kv=2; dh=32; f=128; v=1000; L=4
  l = 2*d*h*dh + 2*d*kv*dh + 2*dh + 4*d + 3*d*f; print v*d + L*l + d }')" \
  "$(awk 'BEGIN { d=64; h=4; kv=2; dh=32; f=128; v=1000; L=4
  l = 2*d*h*dh + 2*d*kv*dh + 2*dh + 4*d + 3*d*f; print v*d + L*l + d }')" \
  "gemma3_text: tied embedding, four norms and q/k norms a layer"
# gpt_neox, attention_bias false: no key/value grouping (null), LayerNorms with
# biases, a plain GELU MLP with biases
count c-neox "$(awk 'BEGIN { d=64; f=128; v=1000; L=4
  l = 4*d*d + 4*d + 2*d*f + f + d; print 2*v*d + L*l + 2*d }')" \
  "$(awk 'BEGIN { d=64; f=128; v=1000; L=4
  l = 4*d*d + 4*d + 2*d*f + f + d; print 2*v*d + L*l + 2*d }')" \
  "gpt_neox: attention_bias false and LayerNorms counted"
# gpt_oss: attention biases and sinks, every layer sparse, biased experts and router
count c-oss "$(awk 'BEGIN { d=64; h=4; kv=2; dh=16; f=128; v=1000; e=4; L=4
  l = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + d + h + 2*d + d*e + e + e*(3*d*f + 2*f + d)
  print 2*v*d + L*l + d }')" \
  "$(awk 'BEGIN { d=64; h=4; kv=2; dh=16; f=128; v=1000; e=4; L=4
  l = 2*d*h*dh + 2*d*kv*dh + h*dh + 2*kv*dh + d + h + 2*d + d*e + e + 2*(3*d*f + 2*f + d)
  print 2*v*d + L*l + d }')" \
  "gpt_oss: biases, sinks and biased experts in every layer (total and active)"

# --- refusals, each naming its key
mk r-str "\"model_type\": \"qwen3\", $B, \"head_dim\": null, \"hidden_size\": \"64\""
refused r-str "hidden_size' must be an integer from 1 to" "a width given as a string is refused by key"
mk r-tie "\"model_type\": \"qwen3\", $B, \"tie_word_embeddings\": 1"
refused r-tie "tie_word_embeddings' must be true or false" "a flag given as 1 is refused, not read as true"
mk r-cap "\"model_type\": \"gemma2\", $B, \"attn_logit_softcapping\": -1"
refused r-cap "attn_logit_softcapping': must be a non-negative number or null" "a negative soft-capping threshold"
mk r-cap2 "\"model_type\": \"gemma2\", $B, \"attn_logit_softcapping\": null, \"final_logit_softcapping\": \"30\""
refused r-cap2 "final_logit_softcapping': must be a non-negative number or null" "a soft-capping threshold given as a string"
mk r-rope "\"model_type\": \"qwen3\", $B, \"rope_scaling\": 3"
refused r-rope "rope_scaling': must be an object or null" "rope_scaling that is not an object"
mk r-att "\"model_type\": \"qwen3\", $B, \"attention_type\": \"mla\""
refused r-att "attention_type': perfmod builds the attention model_type defines" "attention_type on a Qwen3"
mk r-swin "\"model_type\": \"qwen3\", $B, \"use_sliding_window\": true, \"max_window_layers\": 2"
refused r-swin "sliding_window': use_sliding_window is true: a window size is needed" \
  "use_sliding_window without a window size"
MOE="\"model_type\": \"qwen3_moe\", $B, \"num_experts\": 4, \"num_experts_per_tok\": 2"
mk r-step "$MOE, \"decoder_sparse_step\": 0"
refused r-step "decoder_sparse_step': must be at least 1" "decoder_sparse_step 0"
mk r-mlp1 "$MOE, \"mlp_only_layers\": 3"
refused r-mlp1 "mlp_only_layers': must be a list of layer indices" "mlp_only_layers that is not a list"
mk r-mlp2 "$MOE, \"mlp_only_layers\": [4]"
refused r-mlp2 "mlp_only_layers': must hold layer indices from 0 to num_hidden_layers - 1" \
  "mlp_only_layers naming layer 4 of 4"
mk r-mlp3 "$MOE, \"mlp_only_layers\": [\"a\"]"
refused r-mlp3 "mlp_only_layers': must hold layer indices" "mlp_only_layers holding a string"
mk r-top "$MOE, \"num_experts_per_tok\": 5"
expect_one_line 2 "r-top.json: num_experts_per_tok 5 exceeds 4 experts" "top-k beyond the experts" -- \
  --model "$TMP/r-top.json"
mk r-kvh "\"model_type\": \"qwen3\", $B, \"num_key_value_heads\": 3"
expect_one_line 2 "r-kvh.json: num_attention_heads 4 is not a multiple of num_key_value_heads 3" \
  "key/value heads that do not divide the heads" -- --model "$TMP/r-kvh.json"
DS="\"model_type\": \"deepseek_v3\", $B, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2,
 \"moe_intermediate_size\": 32, \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16"
mk r-freq "$DS, \"moe_layer_freq\": 0"
refused r-freq "moe_layer_freq': must be at least 1" "moe_layer_freq 0"
mk r-datt "$DS, \"attention_type\": \"gqa\""
refused r-datt "attention_type': perfmod builds" "a DeepSeek attention_type other than mla"
mk r-fkd "$DS, \"first_k_dense_replace\": 5"
refused r-fkd "first_k_dense_replace': exceeds num_hidden_layers" "first_k_dense_replace beyond the layers"
bad=0
for k in kv_lora_rank qk_nope_head_dim qk_rope_head_dim v_head_dim; do
  mk "r-$k" "$(printf '%s' "$DS" | sed "s/\"$k\": [0-9]*/\"$k\": null/")"
  run_pm --model "$TMP/r-$k.json"
  [ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] &&
    grep -q "r-$k.json: key '$k': multi-head latent attention needs it, a positive integer" "$TMP/err" ||
    { diag "$k: $(cat "$TMP/err")"; bad=1; }
done
ok $bad "each of latent attention's four widths, null, is refused by name"
mk r-moe "$(printf '%s' "$DS" | sed 's/"moe_intermediate_size": 32, //')"
refused r-moe "moe_intermediate_size': missing: an expert's width" "a DeepSeek MoE without moe_intermediate_size"
mk r-ne0 "$(printf '%s' "$DS" | sed 's/"n_routed_experts": 4/"n_routed_experts": 0/')"
refused r-ne0 "n_routed_experts' must be an integer from 1 to [0-9]+ \\(model_type deepseek_v3 has experts\\)" \
  "n_routed_experts 0 on a DeepSeek"
mk r-mx0 "\"model_type\": \"mixtral\", $B, \"num_local_experts\": 0, \"num_experts_per_tok\": 2"
refused r-mx0 "num_local_experts' must be an integer from 1" "num_local_experts 0 on a Mixtral"
mk r-mxk "\"model_type\": \"mixtral\", $B, \"num_local_experts\": 8"
expect_one_line 2 "r-mxk.json: missing key num_experts_per_tok \\(model_type mixtral\\)" \
  "a Mixtral without its top-k" -- --model "$TMP/r-mxk.json"
mk r-mxe "\"model_type\": \"mixtral\", $B"
expect_one_line 2 "r-mxe.json: missing key num_local_experts/num_experts \\(model_type mixtral\\)" \
  "a Mixtral without experts" -- --model "$TMP/r-mxe.json"
mk r-noh "\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 8, \"vocab_size\": 10"
expect_one_line 2 "r-noh.json: missing key n_embd/hidden_size/d_model \\(model_type qwen3\\)" \
  "a config without a width names the three keys" -- --model "$TMP/r-noh.json"
mk r-nohd "\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"hidden_size\": 64, \"intermediate_size\": 8, \"vocab_size\": 10"
expect_one_line 2 "r-nohd.json: missing key n_head/num_attention_heads/num_heads \\(model_type qwen3\\)" \
  "a config without heads names the three keys" -- --model "$TMP/r-nohd.json"
mk r-nol "\"model_type\": \"qwen2\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"intermediate_size\": 8, \"vocab_size\": 10"
expect_one_line 2 "r-nol.json: missing key n_layer/num_hidden_layers/num_layers \\(model_type qwen2\\)" \
  "a Qwen2 config without layers" -- --model "$TMP/r-nol.json"
mk r-pat "\"model_type\": \"gemma3_text\", $B, \"sliding_window\": 64, \"sliding_window_pattern\": 0"
refused r-pat "sliding_window_pattern': must be at least 1" "sliding_window_pattern 0"
mk r-rp0 "\"model_type\": \"gpt_neox\", $B, \"rotary_pct\": 0"
refused r-rp0 "rotary_pct': must be a fraction in \\(0, 1\\]" "rotary_pct 0"
mk r-rp2 "\"model_type\": \"gpt_neox\", $B, \"rotary_pct\": 1.5"
refused r-rp2 "rotary_pct': must be a fraction in \\(0, 1\\]" "rotary_pct 1.5"
mk r-lt1 "\"model_type\": \"qwen3\", $B, \"layer_types\": \"full_attention\""
refused r-lt1 "layer_types': must list num_hidden_layers attention types" "layer_types that is not a list"
mk r-lt2 "\"model_type\": \"qwen3\", $B, \"layer_types\": [\"full_attention\"]"
refused r-lt2 "layer_types': must list num_hidden_layers attention types" "layer_types of 1 for 4 layers"
mk r-lt3 "\"model_type\": \"qwen3\", $B, \"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\", \"full_attention\"]"
refused r-lt3 "layer_types': sliding_attention layers without a sliding_window" "sliding layers without a window"
mk r-lt4 "\"model_type\": \"qwen3\", $B, \"layer_types\": [\"full_attention\", 3, \"full_attention\", \"full_attention\"]"
refused r-lt4 "layer_types': only full_attention and sliding_attention layers are modelled" "a layer type that is a number"
printf '[1, 2]\n' >"$TMP/r-arr.json"
expect_one_line 2 "r-arr.json: not a JSON object" "a config that is a JSON array" -- --model "$TMP/r-arr.json"
mk r-mt "\"model_type\": 3, $B"
expect_one_line 2 "r-mt.json: missing key model_type \\(one of gpt2, " "a model_type that is not a string" -- \
  --model "$TMP/r-mt.json"
mk r-lb "\"model_type\": \"llama\", $B, \"mlp_bias\": true"
refused r-lb "mlp_bias': true: perfmod builds this model type's layers without biases" "a Llama asking for MLP biases"

# ===== the builder on these families: matrix FLOPs from the dimensions =====
# A prefill of T = 128 tokens does 2 x T x (the layers' matrix weights + the
# logits' v x d) in its linear layers; fusions and unfused attention change
# element-wise kernels, not these.  A serving engine (--engine) computes the
# logits of the last token only: 2 x (T x layers' + b x v x d).
fc () {  # fc MODEL ARGS...: the FC class's FLOPs of a phase (fw, or $PH) of perfmod graph
  m=$1; shift
  "$PERFMOD" graph --model "$M/$m.json" --batch 1 --seq 128 "$@" --format csv 2>/dev/null |
    awk -F, -v ph="${PH:-fw}" 'NR > 1 && $6 == "FC" && $5 == ph { f += $13 * $4; n++ }
      END { if (n) printf "%.0f\n", f }'
}
bad=0
for mw in "c-qwen2 $((4 * (2*64*64 + 2*64*32 + 3*64*128)))" "c-qwen3b $((4 * (2*64*128 + 2*64*64 + 3*64*128)))" \
          "c-gemma3 $((4 * (2*64*128 + 2*64*64 + 3*64*128)))" "c-neox $((4 * (4*64*64 + 2*64*128)))"; do
  set -- $mw
  want=$((2 * 128 * ($2 + 1000 * 64)))
  weng=$((2 * 128 * $2 + 2 * 1000 * 64))
  for o in "" --fusion "--attention unfused" "--fusion --attention unfused"; do
    got=$(fc $1 $o)
    [ "$got" = "$want" ] || { diag "$1 $o: $got, want $want"; bad=1; }
  done
  for o in --engine "--engine --attention unfused"; do
    got=$(fc $1 $o)
    [ "$got" = "$weng" ] || { diag "$1 $o: $got, want $weng"; bad=1; }
  done
done
ok $bad "dense qwen2/qwen3/gemma3/neox prefills: linear FLOPs are 2 x tokens x weights; --engine computes the last token's logits"
bad=0
for m in c-qmoe c-ds c-oss; do
  a=$(fc $m --attention unfused) e=$(fc $m --engine --attention unfused)
  [ -n "$a" ] && [ -n "$e" ] && [ $((a - e)) -eq $((2 * 127 * 1000 * 64)) ] || { diag "$m: $a vs $e"; bad=1; }
done
ok $bad "MoE prefills (qwen2_moe, deepseek_v3, gpt_oss): --engine saves the logits of 127 of 128 tokens exactly"
bad=0
for m in c-qwen2 c-qwen3b c-gemma3 c-neox c-qmoe c-ds c-oss; do
  for o in "" "--attention unfused"; do
    f=$(PH=fw fc $m --mode train $o) b=$(PH=bw fc $m --mode train $o)
    [ -n "$f" ] && [ "$f" -gt 0 ] && [ "$b" = $((2 * f)) ] || { diag "$m $o: fw $f bw $b"; bad=1; }
  done
done
ok $bad "training steps of the seven families: the backward's matrix FLOPs are twice the forward's"
printf '{"model_type": "gemma2", %s, "head_dim": 16, "sliding_window": 64,
 "attn_logit_softcapping": 50.0, "final_logit_softcapping": null}\n' "$B" >"$TMP/g2cap.json"
printf '{"model_type": "gemma2", %s, "head_dim": 16, "sliding_window": 64,
 "attn_logit_softcapping": null, "final_logit_softcapping": 0}\n' "$B" >"$TMP/g2nocap.json"
"$PERFMOD" graph --model "$TMP/g2cap.json" --attention unfused --batch 1 --seq 128 --format csv >"$TMP/cap" 2>/dev/null
"$PERFMOD" graph --model "$TMP/g2nocap.json" --attention unfused --batch 1 --seq 128 --format csv >"$TMP/nocap" 2>/dev/null
ok $(awk -F, 'FILENAME ~ /nocap/ && $7 == "tanh" { bad++ }
  FILENAME !~ /nocap/ && $7 == "tanh" && $3 >= 0 && $8 == 4*128 && $12 == 128 { n += $4 }
  FILENAME ~ /nocap/ && $6 == "BMM" { bmm++ }
  END { print (n == 4 && bmm > 0 && !bad) ? 0 : 1 }' "$TMP/cap" "$TMP/nocap") \
  "Gemma 2 attention soft-capping: a tanh over h x s rows of s scores in each of 4 layers, none without it"
# --layers on a model of mixed layers: gemma3 (pattern 2) repeats its kinds
"$PERFMOD" graph --model "$M/c-gemma3.json" --layers 8 --batch 1 --seq 128 --format csv >"$TMP/l8" 2>/dev/null
ok $(awk -F, 'NR > 1 && $6 == "FC" && $5 == "fw" { f += $13 * $4 } END { print (f == 2*128*(8*(2*64*128 + 2*64*64 + 3*64*128) + 64000)) ? 0 : 1 }' "$TMP/l8") \
  "--layers 8 on a 4-layer Gemma 3: eight layers' matrix FLOPs"

# ===== --opgraph files: malformed rows named by file:line =====
H='Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape'
printf '%s\n' "$H" >"$TMP/o0.csv"
expect_one_line 2 "o0.csv: no operators" "an op graph of a header only" -- --opgraph "$TMP/o0.csv"
printf '%s\nlin,Linear,"[[%s, (64, 256, 512)]]",[],[]\n' "$H" "'Linear'" >"$TMP/o1.csv"
expect_one_line 2 "o1.csv:2: 5 fields, expected 9" "a row short of fields" -- --opgraph "$TMP/o1.csv"
printf '%s\nlin,Linear,"[[%s, (64, 256, 512)]]",[],[],set(),set(),"[(64, 256)]","(64, 512"\n' "$H" "'Linear'" >"$TMP/o2.csv"
expect_one_line 2 "o2.csv:2: column OutputShape: expected ',' or a closing bracket" "an unclosed OutputShape" -- \
  --opgraph "$TMP/o2.csv"
printf '%s\ninput_ids,Embedding,[],[],[],set(),set(),"[(0, 128)]","(0, 128)"\n' "$H" >"$TMP/o3.csv"
expect_one_line 2 "o3.csv:2: node input_ids: batch 0 x seq 128: expected a batch from 1 to" \
  "traced inputs of batch 0" -- --opgraph "$TMP/o3.csv"
printf '%s\nlin,Linear,"[[%s]]",[],[],set(),set(),"[(64, 256)]","(64, 512)"\n' "$H" "'Linear'" >"$TMP/o4.csv"
expect_one_line 2 "o4.csv:2: node lin: a kernel must be \\[NAME, ARGS\\]" "a kernel without arguments" -- \
  --opgraph "$TMP/o4.csv"
printf '%s\nact,gelu,"[[%s, (64, 512)]]",[],[],set(),set(),"[(64, 512)]","()"\n' "$H" "'VECgelu'" >"$TMP/o5.csv"
expect_one_line 2 "o5.csv:2: node act: vector kernel VECgelu in a node without an output shape" \
  "a vector kernel in a node without an output" -- --opgraph "$TMP/o5.csv"
printf '%s\ncp,copy,"[[%s, (5, 6)]]",[],[],set(),set(),"[(64, 512)]","(64, 512)"\n' "$H" "'MEM'" >"$TMP/o6.csv"
expect_one_line 2 "o6.csv:2: node cp: MEM arguments must be shapes" "MEM given numbers, not shapes" -- \
  --opgraph "$TMP/o6.csv"
printf '%s\nx,foo,"[[%s, (64, 512, 3)]]",[],[],set(),set(),"[(64, 512)]","(64, 512)"\n' "$H" "'VECgelu'" >"$TMP/o8.csv"
expect_one_line 2 "o8.csv:2: node x: unknown kernel 'VECgelu' or bad arguments" "a vector kernel of three sizes" -- \
  --opgraph "$TMP/o8.csv"
printf '%s\nar,allreduce,"[[%s, (1048576,)], [%s, (4096,)], [%s, (2048,)]]",[],[],set(),set(),"[(64, 512), 7]","(64, 512)"\nlin,Linear,"[[%s, (64, 256, 512)]]",[],[],set(),set(),"[(64, 256)]","(64, 512)"\n' \
  "$H" "'ALLREDUCE'" "'ALLREDUCE_ASYNC'" "'SENDRECV'" "'Linear'" >"$TMP/o7.csv"
run_pm --opgraph "$TMP/o7.csv" --gpu h100 --per-op --format csv
ok $([ "$rc" -eq 0 ] && awk -F, '$2 == "ar" && $6 == 0 { a = 1 } $2 == "lin" && $6 > 0 { l = 1 } END { exit !(a && l) }' "$TMP/out" &&
     echo 0 || echo 1) "a traced graph's collectives cost nothing on one GPU, its Linear does"

# ===== parameter files (--plugin-opt PLUGIN:params=FILE) =====
f64 () {
  for v; do
    case $v in
      1) printf '\000\000\000\000\000\000\360\077' ;;
      *) printf '\000\000\000\000\000\000\000\000' ;;
    esac
  done
}
lr () {  # lr FILE [HEADER-LINES] [TRAILER]: linreg's five classes, coefficients 1
  {
    printf 'perfmod-params 1\npredictor: linreg\ngpus: Tesla_T4\n%s' "${2:-}"
    for c in bmm linear elementwise softmax layernorm; do
      printf 'tensor %s.fit 1 2\ntensor %s.extrapolate 1 2\n' $c $c
    done
    printf 'data\n'
    for c in bmm linear elementwise softmax layernorm; do f64 1 1 1 1; done
    printf '%s' "${3:-}"
  } >"$1"
}
LR="--model gpt2-large --gpu a100 --dtype fp32 --predictor linreg --plugin-opt linreg:tc_params=none --format csv"
lr "$TMP/ok.params"
lr "$TMP/pad.params" 'pad: ...
'
run_pm $LR --plugin-opt "linreg:params=$TMP/ok.params"
cp "$TMP/out" "$TMP/ok.out"
run_pm $LR --plugin-opt "linreg:params=$TMP/pad.params"
ok $(awk -F, 'NR == 2 && $1 == "linreg" && $2 > 0 { f = 1 } END { exit !f }' "$TMP/ok.out" &&
     cmp -s "$TMP/ok.out" "$TMP/out" && echo 0 || echo 1) "a 'pad:' header line is skipped: the same prediction"
cat "$TMP/ok.params" | "$PERFMOD" $LR --plugin-opt linreg:params=/dev/stdin >"$TMP/out" 2>"$TMP/err"
ok $(awk -F, 'NR == 2 && $1 == "linreg" && $2 > 0 { f = 1 } END { exit !f }' "$TMP/out" &&
     cmp -s "$TMP/ok.out" "$TMP/out" && echo 0 || echo 1) "a parameter file read from a pipe predicts as from the file"
lr "$TMP/tr.params" "" x
cat "$TMP/tr.params" | "$PERFMOD" $LR --plugin-opt linreg:params=/dev/stdin >"$TMP/out" 2>"$TMP/err"
ok $([ $? -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q '/dev/stdin: trailing bytes after the last tensor' "$TMP/err" &&
     echo 0 || echo 1) "a pipe: a byte past the last tensor is refused"
dd if="$TMP/ok.params" of="$TMP/sh.params" bs=1 count=$(($(wc -c <"$TMP/ok.params") - 8)) 2>/dev/null
cat "$TMP/sh.params" | "$PERFMOD" $LR --plugin-opt linreg:params=/dev/stdin >"$TMP/out" 2>"$TMP/err"
ok $([ $? -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "/dev/stdin: truncated: tensor 'layernorm.extrapolate' is short of data" "$TMP/err" &&
     echo 0 || echo 1) "a pipe: a file 8 bytes short names the tensor it cuts"
pbad () {  # pbad NAME HEADER-LINE PATTERN DESCRIPTION
  lr "$TMP/$1.params" "$2
"
  expect_one_line 2 "$1.params:$3" "$4" -- $LR --plugin-opt "linreg:params=$TMP/$1.params"
}
pbad k1 ': 3' "4: bad or repeated key ''" "an empty key"
pbad k2 'bad key: 3' "4: bad or repeated key 'bad key'" "a key with a space"
pbad k3 'gpus: 3' "4: bad or repeated key 'gpus'" "a repeated key"
pbad k4 'tensor bmm.fit 1 2' "5: bad or repeated tensor 'bmm.fit'" "a repeated tensor"
pbad k5 'tensor zz 0 2' "4: bad or repeated tensor 'zz'" "a tensor of 0 rows"
pbad k6 'tensor zz 16777217 1' "4: bad or repeated tensor 'zz'" "a tensor of 2^24 + 1 rows"
pbad k7 'junk' "4: expected 'key: value', 'tensor NAME ROWS COLS' or 'data'" "a line that is none of the three"
printf 'perfmod-params 2\n' >"$TMP/v2.params"
expect_one_line 2 "v2.params:1: parameter file version 2; this perfmod reads version 1" "version 2 refused" -- \
  $LR --plugin-opt "linreg:params=$TMP/v2.params"
printf 'perfmod-params 1\npredictor: linreg\n' >"$TMP/eof.params"
expect_one_line 2 "eof.params:3: unexpected end of file before 'data'" "a header without 'data'" -- \
  $LR --plugin-opt "linreg:params=$TMP/eof.params"

# ===== --strategy keys =====
for st in "tp=2,,pp=1|'': expected KEY=VALUE" "=3|'=3': expected KEY=VALUE" "tp=|'tp=': expected KEY=VALUE" \
          "tpo=2|tpo=2: expected 0 or 1" "sp=2|sp=2: expected 0 or 1" "zero=4|zero=4: expected a ZeRO stage 0, 1, 2 or 3" \
          "schedule=interleaved|schedule=interleaved needs vp>=2" "split=1:0|split=1:0: '0' is not a positive number of layers" \
          "vp=2|vp=2 needs schedule=interleaved" "tp=1024,pp=1024,cp=2|tp=1024 x pp=1024 x cp=2: more than 1048576 GPUs"; do
  expect_one_line 2 "${st#*|}" "--strategy ${st%%|*} refused" -- --mode train --strategy "${st%%|*}"
done

# ===== perfmod search: --fix honoured, rows that add up =====
# every row: tp x pp x dp x cp is the GPUs, --fix's keys as fixed, and
# tokens/s = global batch x seq / step time
srows () {  # srows GPUS BATCH SEQ FIXED-AWK-CONDITION DESCRIPTION -- ARGS
  g=$1 gb=$2 sq=$3 cond=$4 what=$5
  shift 6
  run_pm search --gpus "$g" --global-batch "$gb" --seq "$sq" --format csv "$@"
  ok $([ "$rc" -eq 0 ] && awk -F, -v g="$g" -v gb="$gb" -v sq="$sq" '
    NR == 1 { next }
    { s = $0; sub(/^[0-9]+,"/, "", s); sub(/".*/, "", s); n = split(s, kv, ",")
      delete v; for (i = 1; i <= n; i++) { split(kv[i], p, "="); v[p[1]] = p[2] }
      if (v["tp"] * v["pp"] * v["dp"] * v["cp"] != g) bad++
      split($0, q, "\""); split(q[3], c, ","); t = c[3] * 1000 / c[2] ? gb * sq * 1000 / c[2] : 0
      if (t / c[3] < 0.999 || t / c[3] > 1.001) bad++
      if (!('"$cond"')) bad++
      rows++ }
    END { exit !(rows > 0 && !bad) }' "$TMP/out" && echo 0 || { diag "$(head -3 "$TMP/out")" "$(cat "$TMP/err")"; echo 1; }) "$what"
}
srows 8 16 256 'v["ep"] == 2 && v["pp"] == 2' "search --fix ep=2,pp=2 on a qwen2_moe: every row keeps both" -- \
  --model "$M/c-qmoe.json" --fix ep=2,pp=2 --top 5
srows 8 16 256 'v["kernels"] == "te" && v["sp"] == 1 && v["tpo"] == 1 && v["tp"] > 1' \
  "search --fix kernels=te,sp=1,tpo=1: every row overlaps tp communication" -- \
  --model gpt2-large --fix kernels=te,sp=1,tpo=1 --top 5
srows 3 12 128 'v["pp"] != 3 || v["split"] ~ /^[12]:[12]:[12]$/' \
  "search on 3 GPUs of a 4-layer model: pp=3 rows split the layers unevenly" -- \
  --model "$M/c-qwen2.json" --top 60
run_pm search --model "$M/c-qwen2.json" --gpus 3 --global-batch 12 --seq 128 --top 60 --format csv
ok $(awk -F, '/pp=3,/ && /split=/ { s = $0; sub(/.*split=/, "", s); sub(/".*/, "", s); n = split(s, a, ":")
       if (n == 3 && a[1] + a[2] + a[3] == 4) good++; else bad++ }
     END { exit !(good > 0 && !bad) }' "$TMP/out" && echo 0 || echo 1) \
  "... and each split= gives three stages of the 4 layers"
srows 8 16 256 'v["cp"] == 2 && v["schedule"] == "gpipe"' "search --fix cp=2,schedule=gpipe on a gemma3" -- \
  --model "$M/c-gemma3.json" --fix cp=2,schedule=gpipe --top 5
srows 8 16 256 'v["dp"] == 8' "search --fix dp=8 on a deepseek_v3 (experts over dp)" -- \
  --model "$M/c-ds.json" --fix dp=8 --top 5
run_pm search --model gpt2-large --gpus 8 --global-batch 16 --top 1
ok $([ "$rc" -eq 0 ] && grep -q "global batch 16 x seq 1024," "$TMP/out" && echo 0 || echo 1) \
  "search without --seq takes gpt2-large's 1024 positions, not 2048"

# ===== output files (--plot) =====
expect_one_line 1 "$TMP/none/x.svg: cannot write: No such file or directory" "--plot into a missing folder" -- \
  --plot "$TMP/none/x.svg" --batch 1 --seq 128
mkdir -p "$TMP/w/sub"
ln -s sub/t.svg "$TMP/w/lnk.svg"
ln -s ../c.json "$TMP/w/inp.svg"
cp "$M/c-qwen2.json" "$TMP/c.json"
: >"$TMP/w/sub/t.svg.tmp2147483000"
: >"$TMP/w/sub/t.svg.tmpx"
(cd "$TMP/w" && "$PERFMOD" --plot lnk.svg --batch 1 --seq 128 >/dev/null 2>&1)
ok $([ -L "$TMP/w/lnk.svg" ] && grep -q '^<svg ' "$TMP/w/sub/t.svg" && [ ! -e "$TMP/w/sub/t.svg.tmp2147483000" ] &&
     [ -e "$TMP/w/sub/t.svg.tmpx" ] && echo 0 || echo 1) \
  "--plot through a relative symlink writes its target, removes a dead process's file aside, keeps others"
chmod 600 "$TMP/w/sub/t.svg"
(cd "$TMP/w/sub" && "$PERFMOD" --plot t.svg --batch 2 --seq 128 >/dev/null 2>&1)
ok $(ls -l "$TMP/w/sub/t.svg" | grep -q '^-rw-------' && grep -q 'batch 2 x seq 128' "$TMP/w/sub/t.svg" && echo 0 || echo 1) \
  "--plot over a file of mode 600 (a name without a folder) rewrites it and keeps the mode"
(cd "$TMP/w" && "$PERFMOD" --model ../c.json --plot inp.svg --batch 1 --seq 128 >"$TMP/out" 2>"$TMP/err"; echo $? >"$TMP/rc")
ok $([ "$(cat "$TMP/rc")" -eq 1 ] && [ ! -s "$TMP/out" ] &&
     grep -q "inp.svg: is ../c.json, one of this run's inputs: refusing to write over it" "$TMP/err" && echo 0 || echo 1) \
  "--plot through a relative symlink to the model config is refused (exit 1, as t1020), naming both"
run_pm --plot - --batch 1 --seq 128
ok $([ "$rc" -eq 0 ] && grep -q '<title>roofline: gpt2-large, inference (prefill), batch 1 x seq 128</title>' "$TMP/out" &&
     echo 0 || echo 1) "--plot - writes the SVG to standard output"
run_pm --plot /dev/null --batch 1 --seq 128
ok $([ "$rc" -eq 0 ] && [ -c /dev/null ] && grep -q 'gpt2-large' "$TMP/out" && echo 0 || echo 1) \
  "--plot /dev/null: a device is written as it is"
run_pm search --model gpt2-large --gpus 8 --global-batch 16 --seq 256 --top 1 --plot /dev/null
ok $([ "$rc" -eq 0 ] && [ -c /dev/null ] && grep -q 'perfmod search: gpt2-large' "$TMP/out" && echo 0 || echo 1) \
  "search --plot /dev/null"

# ===== --plugin-opt forms =====
for po in "linreg|expected NAME:KEY=VALUE" ":params=x|expected NAME:KEY=VALUE" "linreg:=x|expected NAME:KEY=VALUE" \
          "nosuch:k=v|no plugin 'nosuch' \\(see perfmod plugins\\)" "roofline:foo=1|roofline accepts no key 'foo'"; do
  expect_one_line 2 "--plugin-opt '${po%%|*}': ${po#*|}" "--plugin-opt ${po%%|*} refused" -- --plugin-opt "${po%%|*}"
done

# ===== gpus.d: a GPU of round numbers, and its refusals =====
mkdir -p "$TMP/g/gpus.d"
G='[TG]
source = test
sms = 10
clock_mhz = 1000
fp32_gflops = 2560
mem_gb = 16
mem_bw_gbps = 1000
l2_mb = 4
source.sms = first
source.sms = second'
gi () { printf '%s\n' "$@" >"$TMP/g/gpus.d/10-t.ini"; }
gi "$G"
PERFMOD_DATADIR="$TMP/g" "$PERFMOD" kernel --op gemm --m 1024 --n 1024 --k 1024 --gpu TG --dtype fp32 \
  --predictor roofline --format csv >"$TMP/out" 2>"$TMP/err"
ok $(awk -F, -v want="$(awk 'BEGIN { printf "%.9g", 2 * 1024^3 / 2560e9 * 1e3 }')" \
  'NR == 2 && $1 == "roofline" && $4 == "TG" && $5 == want { f = 1 } END { exit !f }' "$TMP/out" &&
  echo 0 || { diag "$(cat "$TMP/out" "$TMP/err")"; echo 1; }) \
  "a GPU written here (no gpus_per_node, a source given twice): fp32 GEMM at 2 m n k / its 2560 GFLOP/s"
gbad () {  # gbad EXTRA-LINE PATTERN DESCRIPTION
  gi "$G" "$1"
  PERFMOD_DATADIR="$TMP/g" expect_one_line 2 "$2" "$3" -- gpus
}
gbad "sms = -1" "10-t.ini:11: sms: '-1' is not a positive integer \\(at most 1000000\\)" "gpus.d: a negative integer key"
gbad "mem_gb = -2" "10-t.ini:11: mem_gb: '-2' is not a positive number \\(at most 1e12\\)" "gpus.d: a negative number key"
gbad "source.foo = x" "10-t.ini:11: 'source.foo' names no GPU key" "gpus.d: a source for no key"
gbad "base_clock_mhz = 2000" "10-t.ini:1: \\[TG\\]: base_clock_mhz 2000 is above the boost clock clock_mhz 1000" \
  "gpus.d: a base clock above the boost clock"
gi "; no sections"
PERFMOD_DATADIR="$TMP/g" expect_one_line 2 "gpus.d: no GPU sections found" "gpus.d of comments only" -- gpus

finish
