#!/bin/sh
# t1050-serve-coverage.sh: perfmod serve and search --serve beyond t0860: every refusal of a dtype, GPU, model, layout, speculation and trace row; each engine's limits and SGLang's KV memory by hand per GPU; fp8 KV; front-end time; chunk counts; batch limits; osl 1; speculation's tokens; -v -v iterations; disaggregation; the search's deployment counts, refused layouts, oom layouts and every engine's launch command.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 97

# sj VAR ARGS...: perfmod serve ARGS as JSON into $TMP/VAR.json (stderr VAR.err, status VAR.rc)
sj () { v=$1; shift; serve_to json "$TMP/$v.json" "$TMP/$v.err" "$@"; echo "$rc" >"$TMP/$v.rc"; }
# jv VAR EXPR: a field of VAR's JSON (empty when there is none)
jv () { jq -r "$2" "$TMP/$1.json" 2>/dev/null; }

L8="--model llama3.1-8b"
S="$L8 --isl 128 --osl 16 --concurrency 4"

# ---- refusals: one line, exit 2, nothing on stdout ----
expect_one_line 2 "--dtype 'fp32': serving runs bf16, fp16, fp8, fp8_block or nvfp4" "--dtype fp32 refused" -- serve $S --dtype fp32
expect_one_line 2 "--dtype 'int3': serving runs bf16, fp16, fp8, fp8_block or nvfp4" "an unknown --dtype refused" -- serve $S --dtype int3
expect_one_line 2 "--dtype 'tf32': serving runs bf16, fp16, fp8, fp8_block or nvfp4" "--dtype tf32 refused" -- serve $S --dtype tf32
expect_one_line 2 "--kv-dtype 'int8': expected auto, bf16, fp16 or fp8" "--kv-dtype int8 refused" -- serve $S --kv-dtype int8
expect_one_line 2 "bert-large: serving is modelled for decoder-only models \(bert is not\)" "an encoder refused" -- serve $S --model bert-large
expect_one_line 2 "switch-xl4: serving is modelled for decoder-only models \(switch_transformers is not\)" "an encoder-decoder refused" -- serve $S --model switch-xl4
expect_one_line 2 "gpu 'nonesuch': no such GPU" "an unknown GPU named" -- serve $S --gpu nonesuch
expect_one_line 2 "--predictor 'nope'" "an unknown predictor named" -- serve $S --predictor nope
expect_one_line 2 "$TMP/none\.json: cannot read a model config" "a missing config named" -- serve $S --model "$TMP/none.json"
expect_one_line 2 "--strategy with --prefill/--decode: each pool has its own layout" "--strategy with --prefill and --decode refused" -- serve $S --strategy tp=2 --prefill tp=1 --decode tp=1
expect_one_line 2 "--prefill 'tp=1,dp=2': give the replicas as workers, not dp" "dp in a pool's layout refused" -- serve $S --prefill tp=1,dp=2 --decode tp=1
expect_one_line 2 "--strategy 'tp=128,pp=128,dp=128': more than 1048576 GPUs" "a layout of 2M GPUs refused" -- serve $S --strategy tp=128,pp=128,dp=128
# workers x their attention-DP replicas past the limit: 2048 prefill workers of 1024 GPUs
cat > "$TMP/moe1k.json" <<'EOF'
{ "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 1024,
  "intermediate_size": 4096, "moe_intermediate_size": 256, "num_experts": 1024,
  "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_attention_heads": 8,
  "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 4096, "hidden_act": "silu",
  "rms_norm_eps": 1e-06, "tie_word_embeddings": false, "norm_topk_prob": true }
EOF
expect_one_line 2 "a deployment of 2097153 GPUs: more than 1048576" "2048 workers of 1024 attention-DP GPUs refused" -- \
  serve --model "$TMP/moe1k.json" --gpu h100 --isl 128 --osl 16 --concurrency 4 \
  --prefill tp=1,dp=1024,ep=1024,etp=1 --prefill-workers 2048 --decode tp=1
expect_one_line 2 "--strategy: llama3.1-8b: tp=3 does not divide the 32 attention heads" "tp=3 refused naming the heads" -- serve $S --strategy tp=3
expect_one_line 2 "--decode: llama3.1-8b: tp=3 does not divide the 32 attention heads" "a decode layout the model cannot take refused naming --decode" -- serve $S --prefill tp=1 --decode tp=3
expect_one_line 2 "unknown strategy key 'bogus'" "an unknown layout key refused" -- serve $S --strategy bogus=1
# refused_each PATTERN CMD... -- VALUES: CMD with @ replaced by each value is refused (exit 2,
# nothing on stdout, PATTERN with @ replaced by the value on stderr); n counts them
refused_each () {
  pat=$1 n=0
  shift
  cmd=
  while [ "$1" != -- ]; do cmd="$cmd $1"; shift; done
  shift
  for v; do
    # shellcheck disable=SC2086
    run_pm $(echo "$cmd" | sed "s|@|$v|g")
    if [ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "$(echo "$pat" | sed "s|@|$v|g")" "$TMP/err"; then
      n=$((n + 1))
    else
      diag "$v: exit $rc: $(cat "$TMP/err")"
    fi
  done
}
refused_each "^perfmod: --decode 'tp=1,@': a serving replica takes tp, pp, ep, etp, dispatcher only\$" \
  serve $S --prefill tp=1 --decode tp=1,@ -- mbs=2 zero=1 cp=2 sp=1 tpo=1 kernels=te recompute=full \
  schedule=gpipe pp=2,vp=2,schedule=interleaved pp=2,split=16:16
ok $([ "$n" -eq 10 ]; echo $?) "each training key in --decode refused naming it, without dp ($n of 10)"
expect_one_line 2 "--spec 'medusa': expected mtp, eagle or ngram" "an unknown --spec refused" -- serve $S --spec medusa --spec-accept 0.5
expect_one_line 2 "--spec mtp: llama3.1-8b has no multi-token prediction layer" "--spec mtp on a model without MTP layers refused" -- serve $S --spec mtp --spec-accept 0.5
expect_one_line 2 "--spec-tokens and --spec-accept go with --spec" "--spec-accept without --spec refused" -- serve $S --spec-accept 0.5
expect_one_line 2 "needs both --prefill and --decode" "--prefill-workers alone refused" -- serve $S --prefill-workers 2
expect_one_line 2 "needs both --prefill and --decode" "--decode alone refused" -- serve $S --decode tp=1
expect_one_line 2 "serve: 20000000 requests: at most 16777216 are simulated" "2M clients' 10 requests each refused" -- serve $L8 --isl 16 --osl 16 --concurrency 2000000

# ---- traces: each bad one named file:line ----
: > "$TMP/empty.csv"
expect_one_line 2 "empty\.csv:1: empty file: expected a header" "an empty trace refused" -- serve $L8 --trace "$TMP/empty.csv"
printf 'arrival_ms,isl,osl\n' > "$TMP/hdr.csv"
expect_one_line 2 "hdr\.csv: no requests in the trace" "a trace of a header only refused" -- serve $L8 --trace "$TMP/hdr.csv"
printf 'arrival_ms,isl,osl\n0,128,16\n5,128\n' > "$TMP/nf.csv"
expect_one_line 2 "nf\.csv:3: 2 fields, the header has 3" "a short trace row names file:line" -- serve $L8 --trace "$TMP/nf.csv"
for a in -5 x inf 2e12; do printf 'arrival_ms,isl,osl\n%s,128,16\n' "$a" > "$TMP/arr$a.csv"; done
refused_each "arr@\.csv:2: arrival_ms '@': expected milliseconds from 0 to 1e12" \
  serve $L8 --trace "$TMP/arr@.csv" -- -5 x inf 2e12
ok $([ "$n" -eq 4 ]; echo $?) "arrival_ms -5, x, inf and 2e12 refused naming file:line ($n of 4)"
printf '"arrival_ms,isl,osl\n0,1,2\n' > "$TMP/quote.csv"
expect_one_line 2 "quote\.csv:1: unterminated quoted field" "a trace's header with an open quote names file:1" -- serve $L8 --trace "$TMP/quote.csv"
printf 'arrival_ms,isl,osl\n5\n' > "$TMP/one.csv"
expect_one_line 2 "one\.csv:2: 1 fields, the header has 3" "a trace row of one field names file:line" -- serve $L8 --trace "$TMP/one.csv"
printf 'arrival_ms,isl,osl\n0,128,x\n' > "$TMP/bado.csv"
expect_one_line 2 "bado\.csv:2: column 'osl'" "a bad output length names file:line and the column" -- serve $L8 --trace "$TMP/bado.csv"
n=0
for r in 0,3000000000,16 0,16,3000000000; do
  printf 'arrival_ms,isl,osl\n%s\n' "$r" > "$TMP/long.csv"
  run_pm serve $L8 --trace "$TMP/long.csv"
  [ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q "long\.csv:2: isl or osl above 2147483648 tokens" "$TMP/err" && n=$((n + 1))
done
ok $([ "$n" -eq 2 ]; echo $?) "a prompt or an output above 2^31 tokens refused naming file:line ($n of 2)"
expect_one_line 2 "none\.csv: cannot read a trace" "a missing trace named" -- serve $L8 --trace "$TMP/none.csv"
expect_one_line 2 "is a directory, not a trace" "a folder as a trace refused" -- serve $L8 --trace "$TMP"
# the other header names, a blank line; a prompt longer than TensorRT-LLM's budget
printf 'timestamp_ms,input_tokens,output_tokens\n0,256,8\n\n10,9000,4\n20,100,4\n' > "$TMP/alt.csv"
expect_one_line 2 "--trace gives each request's lengths" "--trace with --osl alone refused" -- serve $L8 --trace "$TMP/alt.csv" --osl 4
expect_one_line 2 "a prompt of 9000 tokens is more than TensorRT-LLM's max_num_tokens 8192" "TensorRT-LLM refuses a trace's longest prompt, not its first" -- serve $L8 --trace "$TMP/alt.csv" --engine trtllm
sj alt $L8 --trace "$TMP/alt.csv"
sj alt1 $L8 --trace "$TMP/alt.csv" --requests 1
sj alt9 $L8 --trace "$TMP/alt.csv" --requests 9
ok $([ "$(jv alt .requests)" = 3 ] && [ "$(jv alt .isl)" = null ] && [ "$(jv alt .concurrency)" = null ] &&
     [ "$(jv alt1 .requests)" = 1 ] && [ "$(jv alt9 .requests)" = 3 ]; echo $?) \
  "a trace with timestamp_ms, input_tokens, output_tokens and a blank line: 3 requests; --requests 1 takes 1, --requests 9 its 3"
sj altt $L8 --trace "$TMP/alt.csv" --engine trtllm --max-tokens 16384
ok $([ "$(jv altt .requests)" = 3 ] && [ "$(jv altt .max_tokens)" = 16384 ] && [ "$(jv altt .engine)" = trtllm ]; echo $?) \
  "TensorRT-LLM takes the 9000-token prompt with --max-tokens 16384"
run_pm serve $L8 --trace "$TMP/alt.csv"
ok $([ "$rc" -eq 0 ] && grep -q "^perfmod .* serve: llama3.1-8b on 1 x NVIDIA_H100_80GB_HBM3, tp=1, trace $TMP/alt.csv\$" "$TMP/out" &&
     grep -q '^output tokens/s .* 3 requests over' "$TMP/out"; echo $?) "the table names the trace and its 3 requests"

# ---- the engines' names and limits ----
sj tr $S --engine trtllm
sj tr2 $S --engine tensorrt-llm
sj tr3 $S --engine TRT-LLM
ok $([ "$(jv tr .engine)" = trtllm ] && cmp -s "$TMP/tr.json" "$TMP/tr2.json" && cmp -s "$TMP/tr.json" "$TMP/tr3.json"; echo $?) \
  "--engine tensorrt-llm and trt-llm are trtllm"
# vLLM's usage-context defaults: 8192 tokens and 1024 requests from 70 GiB but on an A100
sj va $S --gpu a100-80gb
sj vh $S
ok $([ "$(jv va .max_tokens),$(jv va .max_batch)" = 2048,256 ] && [ "$(jv vh .max_tokens),$(jv vh .max_batch)" = 8192,1024 ]; echo $?) \
  "vLLM: 2048 tokens and 256 requests on the A100 80GB (NVIDIA_A100_80GB_PCIe), 8192 and 1024 on an H100"
# SGLang's KV cache by hand: (memory - reserved) less the weights; reserved = 512 MiB +
# 1.5 x the chunk + 2 MiB a CUDA-graph batch + 1 GiB per 8 GPUs, at least 10 GiB above 60
# GiB; the chunk 2048 below 35 GB, 4096 below 60, 8192 below 160, else 16384; graphs to 24
# (80 from tp 4) below 35 and to 8 below 20 (server_args.py), 32 (160) below 60, 256 (512)
# below 160, else 512.  A token
# caches 32 layers x 8 heads x 128 x 2 x 2 B over tp; max_running_requests is
# min(tokens / 2, tokens / max_pos x 512 within 2048 to 4096).
w8=$(awk 'BEGIN { printf "%.9f", 8030261248 * 2 / 1073741824 }')
sglang_kv () {  # sglang_kv NAME SECTION TP CHUNK GRAPHS [ARGS]
  name=$1 sec=$2 tp=$3 chunk=$4 graphs=$5
  shift 5
  sj "sg$name" $S --engine sglang --gpu "$name" --strategy "tp=$tp" "$@" >&2   # stdout is the status
  mem=$(gpu_key "$sec" mem_gb)
  awk -v mem="$mem" -v tp="$tp" -v chunk="$chunk" -v gr="$graphs" -v w="$(jv "sg$name" .memory_gib.weights)" \
      -v kv="$(jv "sg$name" .memory_gib.kv_cache)" -v tok="$(jv "sg$name" .kv_capacity_tokens)" \
      -v mt="$(jv "sg$name" .max_tokens)" -v mb="$(jv "sg$name" .max_batch)" -v w8="$w8" 'BEGIN {
    if (mem == "" || kv == "" || w == "" || w == "null") exit 1
    if (tp == 1 && (w - w8 > 1e-6 || w8 - w > 1e-6)) exit 1
    mib = mem * 1024; res = 512 + 1.5 * chunk + 2 * gr + tp / 8 * 1024
    if (mib > 60 * 1024 && res < 10 * 1024) res = 10 * 1024
    want = (mib - res) * 1048576 - w * 1073741824
    t = int(want / (131072 / tp))
    pool = int(t / 131072) * 512; if (pool < 2048) pool = 2048; if (pool > 4096) pool = 4096
    b = int(t / 2) < pool ? int(t / 2) : pool
    exit !(mt == chunk && (kv * 1073741824 - want) / want < 1e-8 && (want - kv * 1073741824) / want < 1e-8 &&
           tok - t <= 1 && t - tok <= 1 && mb - b <= 1 && b - mb <= 1) }'
}
ok $(sglang_kv l4 NVIDIA_L4 1 2048 24; echo $?) "SGLang on an L4 (24 GiB): chunk 2048, graphs to 24: $(jv sgl4 .memory_gib.kv_cache) GiB, $(jv sgl4 .kv_capacity_tokens) tokens, $(jv sgl4 .max_batch) requests"
ok $(sglang_kv l4 NVIDIA_L4 4 2048 80; echo $?) "SGLang on 4 L4s: graphs to 80 from tp 4, 512 MiB for 4 GPUs: $(jv sgl4 .memory_gib.kv_cache) GiB per GPU"
ok $(sglang_kv l40s l40s 1 4096 32; echo $?) "SGLang on an L40S (48 GiB): chunk 4096, graphs to 32: $(jv sgl40s .memory_gib.kv_cache) GiB"
ok $(sglang_kv l40s l40s 4 4096 160; echo $?) "SGLang on 4 L40S (48 GiB): chunk 4096, graphs to 160: $(jv sgl40s .memory_gib.kv_cache) GiB per GPU"
ok $(sglang_kv t4 Tesla_T4 4 2048 8; echo $?) "SGLang on 4 T4s (15 GiB): graphs to 8 below 20 GiB: $(jv sgt4 .memory_gib.kv_cache) GiB per GPU"
ok $(sglang_kv b200 b200-sxm 1 16384 512; echo $?) "SGLang on a B200 (180 GiB): chunk 16384, graphs to 512, over the 10 GiB floor: $(jv sgb200 .memory_gib.kv_cache) GiB, $(jv sgb200 .max_batch) requests"
ok $(sglang_kv h100 NVIDIA_H100_80GB_HBM3 4 8192 512; echo $?) "SGLang on 4 H100s: chunk 8192, graphs to 512 from tp 4: $(jv sgh100 .memory_gib.kv_cache) GiB per GPU"
ok $(sglang_kv h100 NVIDIA_H100_80GB_HBM3 1 2048 256 --max-tokens 2048; echo $?) "SGLang on an H100 with --max-tokens 2048: the 10 GiB floor ($(jv sgh100 .memory_gib.kv_cache) GiB)"
sj sgoom $S --engine sglang --gpu t4
ok $([ "$(jv sgoom .oom)" = true ] && [ "$(jv sgoom .kv_capacity_tokens)" = 0 ] && [ "$(jv sgoom .memory_gib.kv_cache)" = 0 ] &&
     [ "$(jv sgoom .max_batch)" = 1 ] && [ "$(jv sgoom .memory_gib.capacity)" = "$(gpu_key Tesla_T4 mem_gb)" ] &&
     awk -v w="$(jv sgoom .memory_gib.weights)" -v c="$(jv sgoom .memory_gib.capacity)" \
       'BEGIN { exit !(w + (512 + 1.5 * 2048 + 2 * 8 + 1024 / 8) / 1024 > c) }'; echo $?) \
  "SGLang, Llama-3.1-8B on one T4: its weights and SGLang's 3728 MiB reserve overflow the 15 GiB: no cache (0 tokens, 0 GiB), at most 1 request"
run_pm serve $S --engine sglang --gpu t4
ok $([ "$rc" -eq 0 ] && grep -q '^does not fit: the weights (14\.96 GiB per GPU of 15\.00) leave the KV cache 0 tokens' "$TMP/out" &&
     ! grep -q '^ttft_ms' "$TMP/out"; echo $?) "the table says it does not fit, and gives no latencies"
# a model of 1024 positions: the request pool is 4096 (tokens / 1024 x 512 above it);
# a config without max_position_embeddings: 4096
sj sggpt --model gpt2-large --isl 128 --osl 16 --concurrency 4 --engine sglang
cat > "$TMP/nopos.json" <<'EOF'
{ "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 768,
  "intermediate_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 6,
  "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 32000, "hidden_act": "silu",
  "rms_norm_eps": 1e-05, "tie_word_embeddings": false }
EOF
sj sgnp --model "$TMP/nopos.json" --isl 128 --osl 16 --concurrency 4 --engine sglang
ok $([ "$(jv sggpt .max_batch)" = 4096 ] && cmpf "$(jv sggpt .kv_capacity_tokens)" '>' $((9 * 1024)) &&
     [ "$(jv sgnp .max_batch)" = 4096 ] && cmpf "$(jv sgnp .kv_capacity_tokens)" '>' 8192; echo $?) \
  "SGLang: GPT-2 Large's 1024 positions and a config without positions give a pool of 4096 requests"

# ---- the KV cache in fp8: twice the tokens; auto and bf16 are the weights' dtype ----
sj kv8 $S --kv-dtype fp8
sj kva $S --kv-dtype auto
sj kvb $S --kv-dtype bf16
k1=$(jv vh .kv_capacity_tokens) k8=$(jv kv8 .kv_capacity_tokens)
ok $(awk -v a="$k1" -v b="$k8" 'BEGIN { exit !(a > 1000 && b >= 2 * a && b <= 2 * a + 1) }' &&
     jv kv8 .assumed | grep -q ', the cache in fp8;' && ! jv vh .assumed | grep -q 'cache in fp8'; echo $?) \
  "--kv-dtype fp8: twice the KV tokens ($k1 -> $k8), said in assumed"
sj kvh $S --kv-dtype fp16
ok $([ "$(jv kva .engine)" = vllm ] && cmp -s "$TMP/vh.json" "$TMP/kva.json" && cmp -s "$TMP/vh.json" "$TMP/kvb.json" &&
     cmp -s "$TMP/vh.json" "$TMP/kvh.json"; echo $?) \
  "--kv-dtype auto, bf16 and fp16 (the weights' width): the same run as without"

# ---- the front end's time beside the iterations: TTFT only (50, 60 and 150 ms) ----
# osl 1: no TPOT, no ITL, no decoding iteration; one token per request
fe=""
for e in vllm:50 sglang:60 trtllm:150; do
  sj o1 $L8 --isl 512 --osl 1 --concurrency 4 --engine "${e%:*}"
  if [ "$(jv o1 .tpot_ms.mean)" = null ] && [ "$(jv o1 .itl_ms.p50)" = null ] &&
     [ "$(jv o1 .output_tokens_per_s_per_user)" = null ] && [ "$(jv o1 .batch_mean)" = 0 ] &&
     awk -v t="$(jv o1 .ttft_ms.mean)" -v e2e="$(jv o1 .e2e_ms.mean)" -v f="${e#*:}" \
         -v x="$(jv o1 .output_tokens_per_s)" -v r="$(jv o1 .requests_per_s)" \
         'BEGIN { d = t - e2e - f; q = x / r - 1; exit !(e2e > 0 && x > 0 && d < 1e-6 && d > -1e-6 && q < 1e-9 && q > -1e-9) }'; then
    fe="$fe ${e%:*}"
  else
    diag "$e: $(cat "$TMP/o1.json" "$TMP/o1.err")"
  fi
done
ok $([ "$fe" = " vllm sglang trtllm" ]; echo $?) \
  "osl 1 on each engine: TPOT, ITL and per-user null, no decode, one token a request, TTFT = e2e + 50, 60, 150 ms ($fe)"

# ---- a prompt in chunks: ceil(20000 / chunk) prefill iterations, then osl - 1 decodes ----
sj chv $L8 --isl 20000 --osl 16 --concurrency 1 --requests 2
sj chs $L8 --isl 20000 --osl 16 --concurrency 1 --requests 2 --engine sglang
sj chs2 $L8 --isl 20000 --osl 16 --concurrency 1 --requests 2 --engine sglang --max-tokens 2048
ok $([ "$(jv chv .iterations)" = 36 ] && [ "$(jv chs .iterations)" = 36 ] && [ "$(jv chs2 .iterations)" = 50 ] &&
     cmpf "$(jv chs .ttft_ms.mean)" '<' "$(jv chs2 .ttft_ms.mean)"; echo $?) \
  "20000 tokens: 3 chunks of 8192 + 15 decodes a request on vLLM and SGLang (36 for 2), 10 of 2048 + 15 (50); smaller chunks, later first token"

# ---- more clients than requests: the requests go at once, one prefill, osl - 1 decodes ----
sj few $L8 --isl 512 --osl 64 --concurrency 8 --requests 4 --max-batch 300
ok $([ "$(jv few .requests)" = 4 ] && [ "$(jv few .iterations)" = 64 ] && [ "$(jv few .batch_mean)" = 4 ]; echo $?) \
  "8 clients, 4 requests: 4 prompts in one iteration, 63 decodes of 4 (64 iterations, batch $(jv few .batch_mean))"

# ---- --max-batch: each engine's running requests at most that; the rest wait ----
bm=""
for e in vllm sglang trtllm; do
  sj mb2 $L8 --isl 512 --osl 64 --concurrency 8 --max-batch 2 --engine $e
  sj mb8 $L8 --isl 512 --osl 64 --concurrency 8 --max-batch 8 --engine $e
  if [ "$(jv mb2 .max_batch)" = 2 ] && cmpf "$(jv mb2 .batch_mean)" '<=' 2 && cmpf "$(jv mb2 .batch_mean)" '>' 1 &&
     cmpf "$(jv mb8 .batch_mean)" '>' 2 && cmpf "$(jv mb8 .ttft_ms.mean)" '<' "$(jv mb2 .ttft_ms.mean)"; then
    bm="$bm $e"
  else
    diag "$e: batch $(jv mb2 .batch_mean) / $(jv mb8 .batch_mean), ttft $(jv mb2 .ttft_ms.mean) / $(jv mb8 .ttft_ms.mean)"
  fi
done
ok $([ "$bm" = " vllm sglang trtllm" ]; echo $?) "--max-batch 2 of 8 clients: at most 2 decode a step, the rest wait longer for their first token ($bm)"

# ---- speculative decoding ----
# every request yields its osl tokens, the last step's extra drafts dropped: tokens/s over
# requests/s is osl
sj sp7 $L8 --isl 512 --osl 7 --concurrency 4 --spec eagle --spec-tokens 4 --spec-accept 0.95
ok $(awk -v x="$(jv sp7 .output_tokens_per_s)" -v r="$(jv sp7 .requests_per_s)" 'BEGIN { q = x / r / 7 - 1; exit !(r > 0 && q < 1e-9 && q > -1e-9) }'; echo $?) \
  "EAGLE, 4 drafts at 0.95, osl 7: 7 tokens a request, not more ($(jv sp7 .output_tokens_per_s) / $(jv sp7 .requests_per_s))"
# n-gram drafts cost no layer: faster per token than EAGLE's at the same acceptance (3 by default)
sj ng $L8 --isl 512 --osl 64 --concurrency 4 --spec ngram --spec-accept 0.6
sj eg $L8 --isl 512 --osl 64 --concurrency 4 --spec eagle --spec-accept 0.6
sj nos $L8 --isl 512 --osl 64 --concurrency 4
ok $(cmpf "$(jv ng .tpot_ms.mean)" '<' "$(jv eg .tpot_ms.mean)" && cmpf "$(jv eg .tpot_ms.mean)" '<' "$(jv nos .tpot_ms.mean)"; echo $?) \
  "TPOT: n-gram $(jv ng .tpot_ms.mean) < EAGLE $(jv eg .tpot_ms.mean) < none $(jv nos .tpot_ms.mean) ms"
# MTP on a DeepSeek model: one draft by default, fewer steps a token
sj mtp --model deepseek-v2-lite --isl 512 --osl 64 --concurrency 8 --spec mtp --spec-accept 0.8
sj nomtp --model deepseek-v2-lite --isl 512 --osl 64 --concurrency 8
ok $(awk -v a="$(jv mtp .tpot_ms.mean)" -v b="$(jv nomtp .tpot_ms.mean)" 'BEGIN { exit !(a > b / 1.8 && a < b / 1.1) }'; echo $?) \
  "MTP on DeepSeek-V2-Lite, 1 draft at 0.8 (1.8 tokens a step): TPOT $(jv mtp .tpot_ms.mean) ms vs $(jv nomtp .tpot_ms.mean)"
# -v -v: a line per iteration (with speculation no stretch is merged): their count is the
# iterations, their prompt tokens the requests' (no preemption)
"$PERFMOD" serve $L8 --isl 512 --osl 16 --concurrency 4 --spec ngram --spec-accept 0.6 --format json -v -v > "$TMP/vv.json" 2> "$TMP/vv.err"
ok $(awk -v it="$(jv vv .iterations)" -v rq="$(jv vv .requests)" '/^serve: replica 0 at / { n++; p += $7 }
       END { exit !(n > 0 && n == it && p == rq * 512 && rq == 100) }' "$TMP/vv.err"; echo $?) \
  "-v -v: one line per iteration ($(grep -c '^serve: replica' "$TMP/vv.err")), 100 x 512 prompt tokens in them"

# ---- arrivals ----
run_pm serve $L8 --rate 4 --isl 256 --osl 32
ok $([ "$rc" -eq 0 ] && grep -q ', 4 requests/s, isl 256, osl 32$' "$TMP/out" && grep -q ' 1000 requests over ' "$TMP/out"; echo $?) \
  "a rate: 1000 requests by default, the table says the rate"
sj sd7 $L8 --rate 8 --isl 256 --osl 32 --requests 200 --seed 7
sj sd7b $L8 --rate 8 --isl 256 --osl 32 --requests 200 --seed 7
sj sd8 $L8 --rate 8 --isl 256 --osl 32 --requests 200 --seed 8
ok $([ "$(jv sd7 .rate)" = 8 ] && [ "$(jv sd7 .concurrency)" = null ] && cmp -s "$TMP/sd7.json" "$TMP/sd7b.json" &&
     [ "$(jv sd7 .e2e_ms.mean)" != "$(jv sd8 .e2e_ms.mean)" ] && [ "$(jv sd8 .requests)" = 200 ]; echo $?) \
  "--seed: the same seed, the same Poisson arrivals and numbers; another seed, others"

# ---- tensor parallelism across nodes: tp=8 over two 4-GPU nodes pays the network ----
sj n8 $L8 --isl 512 --osl 64 --concurrency 8 --strategy tp=8
sj n4 $L8 --isl 512 --osl 64 --concurrency 8 --strategy tp=8 --gpus-per-node 4
ok $(cmpf "$(jv n8 .tpot_ms.mean)" '<' "$(jv n4 .tpot_ms.mean)" && [ "$(jv n4 .gpus)" = 8 ]; echo $?) \
  "tp=8: TPOT $(jv n8 .tpot_ms.mean) ms in one node, $(jv n4 .tpot_ms.mean) over two of 4 (--gpus-per-node 4)"

# ---- experts over ep within tp: Mixtral's 46.7 B parameters, 2 bytes each, over 2 GPUs
# whatever the split (etp = tp is tp alone: the same decode step) ----
sj mx $L8 --model mixtral-8x7b --isl 512 --osl 64 --concurrency 8 --strategy tp=2
sj mxe $L8 --model mixtral-8x7b --isl 512 --osl 64 --concurrency 8 --strategy tp=2,ep=2,etp=1
sj mxt $L8 --model mixtral-8x7b --isl 512 --osl 64 --concurrency 8 --strategy tp=2,ep=1,etp=2
w=$(awk 'BEGIN { printf "%.7f", 46702792704 * 2 / 2 / 1073741824 }')
ok $(awk -v a="$(jv mx .memory_gib.weights)" -v b="$(jv mxe .memory_gib.weights)" -v c="$(jv mxt .memory_gib.weights)" -v w="$w" 'BEGIN {
       exit !(w > 0 && a - w < 1e-6 && w - a < 1e-6 && b - w < 1e-6 && w - b < 1e-6 && c - w < 1e-6 && w - c < 1e-6) }' &&
     [ "$(jv mxt .tpot_ms.mean)" = "$(jv mx .tpot_ms.mean)" ] && cmpf "$(jv mxe .tpot_ms.mean)" '>' 0; echo $?) \
  "Mixtral on tp=2: $w GiB of weights per GPU with ep=2,etp=1 and ep=1,etp=2 too; etp=2 decodes as tp=2"

# ---- disaggregated: the GPUs, more decode workers, the prefill's budget ----
D="$L8 --isl 3000 --osl 32 --concurrency 16 --prefill tp=1 --decode tp=1"
sj d13 $D --prefill-workers 2 --decode-workers 3 --engine sglang
sj d11 $D --prefill-workers 2 --decode-workers 1 --engine sglang
ok $([ "$(jv d13 .gpus)" = 5 ] && [ "$(jv d11 .gpus)" = 3 ] && [ "$(jv d13 .requests)" = 160 ] &&
     cmpf "$(jv d13 .tpot_ms.mean)" '<' "$(jv d11 .tpot_ms.mean)" && cmpf "$(jv d13 .batch_mean)" '<' "$(jv d11 .batch_mean)"; echo $?) \
  "SGLang, 2 prefill workers: 3 decode workers' batches smaller and TPOT lower than 1's ($(jv d13 .tpot_ms.mean) vs $(jv d11 .tpot_ms.mean) ms)"
# the transfer: 3000 tokens x 128 KiB over one H100 NIC at nic_efficiency, one latency
nic=$(gpu_key NVIDIA_H100_80GB_HBM3 nic_gbps) eff=$(gpu_key defaults nic_efficiency) lat=$(gpu_key defaults nic_latency_us)
ok $(awk -v t="$(jv d13 .transfer_ms)" -v nic="$nic" -v eff="$eff" -v lat="$lat" 'BEGIN {
       ms = 3000 * 131072 / (nic * 1e9 * eff) * 1e3 + lat / 1e3; d = t - ms
       exit !(nic > 0 && d < 1e-6 && d > -1e-6) }'; echo $?) "the KV transfer of a 3000-token prompt: $(jv d13 .transfer_ms) ms"
sj dv2 $D --max-tokens 2048
sj dv8 $D
sj dt4 $D --max-tokens 4096 --engine trtllm
sj dp1 $L8 --isl 3000 --osl 32 --concurrency 16 --prefill tp=1,dp=1 --decode tp=1 --max-tokens 2048
ok $([ "$(jv dv2 .requests)" = 160 ] && [ "$(jv dt4 .requests)" = 160 ] && [ "$(jv dt4 .max_tokens)" = 4096 ] &&
     cmpf "$(jv dv8 .ttft_ms.mean)" '<' "$(jv dv2 .ttft_ms.mean)" &&
     [ "$(jq -c 'del(.prefill)' "$TMP/dp1.json")" = "$(jq -c 'del(.prefill)' "$TMP/dv2.json")" ]; echo $?) \
  "prefill workers under a 2048-token budget chunk the 3000-token prompts (TTFT $(jv dv2 .ttft_ms.mean) ms vs $(jv dv8 .ttft_ms.mean)); TensorRT-LLM's at 4096 take one a time; --prefill tp=1,dp=1 is tp=1"
run_pm serve $D --prefill-workers 2 --decode-workers 3
ok $([ "$rc" -eq 0 ] && grep -q ', prefill 2 x {tp=1}, decode 3 x {tp=1}, 16 clients, isl 3000, osl 32$' "$TMP/out" &&
     grep -q '^KV transfer: [0-9.]* ms a request on average$' "$TMP/out" && grep -q ' tokens a decode replica ' "$TMP/out"; echo $?) \
  "the table of a disaggregated run: its pools, the transfer, the decode replica's cache"

# ---- a request of whole pages more than the cache holds (vLLM, 16-token pages) ----
# K tokens of cache hold floor(K / 16) pages; a request of 16 floor(K / 16) + 1 tokens
# (fewer than K) needs one page more: it does not fit, a result (oom, exit 0), not a refusal
sj pg $L8 --gpu l4 --isl 128 --osl 16 --concurrency 1
K=$(jv pg .kv_capacity_tokens) mt=""
[ -n "$K" ] && [ "$K" != null ] && [ $((K % 16)) -lt 2 ] && { mt="--max-tokens 2040"; sj pg $L8 --gpu l4 --isl 128 --osl 16 --concurrency 1 $mt; K=$(jv pg .kv_capacity_tokens); }
if [ -n "$K" ] && [ "$K" != null ] && [ $((K % 16)) -ge 2 ]; then
  isl=$((K / 16 * 16 + 1 - 16))
  # shellcheck disable=SC2086
  run_pm serve $L8 --gpu l4 --isl $isl --osl 16 --concurrency 1 --requests 1 --format json $mt
  ok $([ "$rc" -eq 0 ] && jq -e '.oom == true' "$TMP/out" >/dev/null; echo $?) \
    "a request of $((isl + 16)) tokens on $K tokens of 16-token pages ($((K / 16)) pages) does not fit"
  # shellcheck disable=SC2086
  run_pm serve $L8 --gpu l4 --isl $isl --osl 16 --concurrency 1 --requests 1 --format json --prefill tp=1 --decode tp=1 $mt
  ok $([ "$rc" -eq 0 ] && jq -e '.oom == true' "$TMP/out" >/dev/null; echo $?) \
    "disaggregated: the prompt fits the prefill replica, the request not the decode one's pages"
else
  ok 1 "a request of whole pages more than the cache: no capacity ($K)"
  ok 1 "disaggregated: no capacity ($K)"
fi

# ---- perfmod search --serve ----
# deployments on 4 GPUs (tp 1, 2, 4; pp 1, 2 within 4; with experts ep = tp beside tp
# alone; prefill and decode pools of pp=1 layouts splitting the 4 GPUs) x 10 batches =
# configurations + refused + pruned
cat > "$TMP/tiny.json" <<'EOF'
{ "architectures": ["LlamaForCausalLM"], "model_type": "llama", "_name_or_path": "acme/tiny-6h",
  "hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 6,
  "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 32000, "max_position_embeddings": 4096,
  "hidden_act": "silu", "rms_norm_eps": 1e-05, "tie_word_embeddings": false }
EOF
mkdir -p "$TMP/tinymoe"
cat > "$TMP/tinymoe/config.json" <<'EOF'
{ "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "_source": "acme/tiny-moe (a test's)",
  "hidden_size": 1024, "intermediate_size": 4096, "moe_intermediate_size": 512, "num_experts": 8,
  "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_attention_heads": 8,
  "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 4096, "hidden_act": "silu",
  "rms_norm_eps": 1e-06, "tie_word_embeddings": false, "decoder_sparse_step": 1,
  "mlp_only_layers": [], "norm_topk_prob": true, "max_position_embeddings": 8192 }
EOF
SQ="search --serve --gpus 4 --isl 256 --osl 32 --jobs 1"
# tally VAR: configurations + refused + pruned of VAR's JSON
tally () { jq -r 'if .configurations == .predicted + .pruned.layout + .pruned.saturation
                  then .configurations else "miscounted" end' "$TMP/$1.json" 2>/dev/null; }
run_pm $SQ --model "$TMP/tiny.json" --format json
cp "$TMP/out" "$TMP/sd.json"
# 6 heads: tp=4 cannot divide them, one aggregated deployment (10 batches) refused;
# 5 aggregated + 6 disaggregated deployments
ok $([ "$rc" -eq 0 ] && [ "$(tally sd)" = 110 ] && [ "$(jv sd .pruned.layout)" = 10 ]; echo $?) \
  "search --serve, 6 heads on 4 GPUs: 11 deployments x 10 batches ($(tally sd)), tp=4's 10 refused ($(jv sd .pruned.layout))"
ok $(jq -e '(.frontier | length) > 0 and all(.frontier[]; . as $p | (.launch | startswith("vllm serve acme/tiny-6h --tensor-parallel-size ")) and
       (.launch | contains(" --max-num-seqs \($p.batch) ")) and
       (if (.deployment | startswith("prefill ")) then (.launch | contains("NixlConnector")) and (.launch_prefill | type == "string")
        else .launch_prefill == null and (($p.deployment | endswith(",dp=1")) or (.launch | contains("--data-parallel-size \($p.deployment | capture("dp=(?<d>[0-9]+)").d) "))) end))' "$TMP/sd.json" >/dev/null; echo $?) \
  "vLLM's launch of each frontier point: the config's _name_or_path, its batch as --max-num-seqs, dp as --data-parallel-size, the disaggregated ones' NIXL connector"
# --gpus-per-node 2: tp at most 2, 4 aggregated + 6 disaggregated deployments, none refused
run_pm $SQ --model "$TMP/tiny.json" --format json --gpus-per-node 2
cp "$TMP/out" "$TMP/sd2.json"
ok $([ "$rc" -eq 0 ] && [ "$(tally sd2)" = 100 ] && [ "$(jv sd2 .pruned.layout)" = 0 ]; echo $?) \
  "--gpus-per-node 2: tp to 2, 10 deployments ($(tally sd2)), none refused"
# with experts: 7 layouts (tp=2 and 4 with ep = tp too), 7 aggregated + 11 disaggregated,
# and attention data parallelism over the 4 GPUs (ep=4, etp=1: tp=1 x dp=4 and, but for
# TensorRT-LLM, whose attention DP is one GPU a replica, tp=2 x dp=2), aggregated only, with
# SGLang also over DeepEP's kernels (dispatcher=flex) and TensorRT-LLM also with every
# expert sliced over the 4 (ep=1, etp=4: its moe_tp under attention DP)
for e in sglang trtllm; do
  run_pm $SQ --model "$TMP/tinymoe/config.json" --engine $e --dtype fp8 --kv-dtype fp8 --format json
  cp "$TMP/out" "$TMP/s$e.json"
  [ "$rc" -eq 0 ] || diag "$e: exit $rc" "$(cat "$TMP/err")"
done
ok $([ "$(tally ssglang)" = 220 ] && [ "$(tally strtllm)" = 200 ]; echo $?) \
  "search --serve with 8 experts on 4 GPUs: 22 (TensorRT-LLM 20) deployments x 10 batches ($(tally ssglang), $(tally strtllm))"
# (jq exits 0 on empty input: each file is checked to hold something first)
ok $([ -s "$TMP/ssglang.json" ] && jq -e '(.frontier | length) > 0 and all(.frontier[]; . as $p |
       (.launch | startswith("python3 -m sglang.launch_server --model-path acme/tiny-moe --tp-size ")) and
       (.launch | contains(" --max-running-requests \($p.batch) --chunked-prefill-size 8192 --quantization fp8 --kv-cache-dtype fp8_e4m3")) and
       (if (.deployment | startswith("prefill ")) then (.launch | endswith(" --disaggregation-mode decode")) and (.launch_prefill | endswith(" --disaggregation-mode prefill"))
        else (.launch | contains("--disaggregation-mode") | not) and (($p.deployment | endswith(",dp=1")) or (.launch | contains(" --dp-size \($p.deployment | capture("dp=(?<d>[0-9]+)").d) "))) end))' "$TMP/ssglang.json" >/dev/null; echo $?) \
  "SGLang's launch: the first word of _source, fp8 weights and cache, dp as --dp-size, prefill and decode modes"
ok $([ -s "$TMP/strtllm.json" ] && jq -e '(.frontier | length) > 0 and all(.frontier[]; . as $p |
       (.launch | test("^trtllm-serve acme/tiny-moe --tp_size [0-9]+ --pp_size [0-9]+ --ep_size [0-9]+ --max_batch_size \($p.batch) --max_num_tokens 8192 \\(kv_cache_config: dtype fp8\\)")) and
       (if (.deployment | startswith("prefill ")) then (.launch | endswith("(a generation server of trtllm-serve disaggregated)")) and (.launch_prefill | endswith("(a context server of trtllm-serve disaggregated)"))
        else (.deployment | endswith(",dp=1")) or (.launch | endswith(" (x \($p.deployment | capture("dp=(?<d>[0-9]+)").d) instances behind a router)"))
             or ((.deployment | test("^tp=1,ep=4,etp=1,dp=4$")) and (.launch | contains(" --ep_size 4 ")) and (.launch | endswith(" (enable_attention_dp: true)")))
             or ((.deployment | test("^tp=1,ep=1,etp=4,dp=4$")) and (.launch | contains(" --tp_size 4 --pp_size 1 --ep_size 1 ")) and (.launch | endswith(" (enable_attention_dp: true)"))) end))' "$TMP/strtllm.json" >/dev/null; echo $?) \
  "TensorRT-LLM's launch: fp8 cache, the replicas behind a router, context and generation servers"
run_pm $SQ --model "$TMP/tinymoe/config.json" --dtype fp8 --kv-dtype fp8 --no-disagg --format csv
ok $([ "$rc" -eq 0 ] && grep -q '^"tp=2,ep=2,etp=1,dp=2",4,' "$TMP/out" && grep -q '^"tp=4,ep=4,etp=1,dp=1",4,' "$TMP/out" &&
     grep -q '^"tp=2,pp=2,dp=1",4,' "$TMP/out" && ! grep -q '^"prefill' "$TMP/out"; echo $?) \
  "with experts: tp=2 and tp=4 also with ep = tp (etp=1); --no-disagg: no prefill pools"
run_pm $SQ --model "$TMP/tinymoe/config.json" --dtype fp8 --kv-dtype fp8 --no-disagg --top 2
ok $([ "$rc" -eq 0 ] && [ "$(awk '/^the frontier/ { f = 1; getline; next } f && /^$/ { f = 0 } f' "$TMP/out" | wc -l)" -eq 2 ] &&
     grep -Eq '^  vllm serve acme/tiny-moe --tensor-parallel-size [0-9]* --pipeline-parallel-size [0-9]* .*--quantization fp8 --kv-cache-dtype fp8( \(x [0-9]+ instances behind a router\))?$' "$TMP/out"; echo $?) \
  "--top 2: two frontier rows; the best's vLLM launch with fp8 weights and cache"
# attention data parallelism where no replica holds the model: DeepSeek-V3 in fp8 on 16 H100
# (one replica would need 16 GPUs of tp); the best's launch is each engine's own form of it
for e in trtllm sglang vllm; do
  run_pm search --serve --model deepseek-v3 --gpu h100 --gpus 16 --dtype fp8 --isl 1024 --osl 256 \
    --engine $e --no-disagg --format json
  cp "$TMP/out" "$TMP/dsv3$e.json"
done
ok $([ -s "$TMP/dsv3trtllm.json" ] && [ -s "$TMP/dsv3sglang.json" ] && [ -s "$TMP/dsv3vllm.json" ] &&
     jq -e '.best.deployment == "tp=1,ep=16,etp=1,dp=16" and
            (.best.launch | test("^trtllm-serve deepseek-ai/DeepSeek-V3 --tp_size 16 --pp_size 1 --ep_size 16 .* \\(enable_attention_dp: true\\)$"))' "$TMP/dsv3trtllm.json" >/dev/null &&
     jq -e '.best.deployment | test("^tp=[0-9]+,ep=16,etp=1,dp=[0-9]+$")' "$TMP/dsv3sglang.json" >/dev/null &&
     jq -e '.best as $b | $b.launch | contains("--tp-size 16 --dp-size \($b.deployment | capture("dp=(?<d>[0-9]+)").d) --enable-dp-attention --ep-size 16")' "$TMP/dsv3sglang.json" >/dev/null &&
     jq -e '.best as $b | ($b.deployment | test("ep=16,etp=1")) and ($b.launch | contains("--data-parallel-size \($b.deployment | capture("dp=(?<d>[0-9]+)").d) --enable-expert-parallel"))' "$TMP/dsv3vllm.json" >/dev/null; echo $?) \
  "DeepSeek-V3 on 16 H100: attention data parallelism, launched as TensorRT-LLM's attention DP, SGLang's --enable-dp-attention and vLLM's data-parallel expert parallelism"
# DeepEP in the search: SGLang's --moe-a2a-backend deepep, vLLM's DeepEP backend, and the
# perfmod serve command says dispatcher=flex
run_pm search --serve --model deepseek-v3 --gpu h100 --gpus 16 --dtype fp8 --isl 1024 --osl 1024 \
  --engine sglang --format csv
ok $([ "$rc" -eq 0 ] && grep -q '^"tp=4,ep=16,etp=1,dispatcher=flex,dp=4",16,' "$TMP/out" &&
     grep -q '^"tp=1,ep=16,etp=1,dispatcher=flex,dp=16",16,' "$TMP/out"; echo $?) \
  "search --serve: attention data parallelism over DeepEP's kernels too (dispatcher=flex)"
run_pm $SQ --model "$TMP/tiny.json" --no-disagg --ttft 0.001
ok $([ "$rc" -eq 0 ] && grep -q '^no deployment within the targets (--ttft 0.001, --tpot 0 ms)$' "$TMP/out" &&
     grep -q '(misses the targets)$' "$TMP/out" && ! grep -q '<- best' "$TMP/out"; echo $?) \
  "a TTFT target of 1 us: no deployment within it, every frontier row misses it"
# Llama-3.1-8B on 2 T4s (15 GiB): its 16 GB of weights fit no single GPU, so tp=1's
# batches are out of memory (counted, not printed); osl 1: no TPOT, 0 tokens/s per user,
# the frontier the one point with the most tokens/s per GPU
run_pm search --serve --model llama3.1-8b --gpu t4 --gpus 2 --no-disagg --isl 128 --osl 1 --jobs 1 --format json
cp "$TMP/out" "$TMP/st4.json"
run_pm search --serve --model llama3.1-8b --gpu t4 --gpus 2 --no-disagg --isl 128 --osl 1 --jobs 1 --format csv
ok $([ "$rc" -eq 0 ] && [ "$(tally st4)" = 30 ] && ! grep -q '^"tp=1,dp=2"' "$TMP/out" &&
     [ "$(awk 'END { print NR - 1 }' "$TMP/out")" -eq $(($(jv st4 .predicted) - 10)) ]; echo $?) \
  "2 T4s: 3 deployments x 10 batches ($(tally st4)), tp=1's 10 out of memory and not listed"
ok $(jq -e '(.frontier | length) == 1 and .frontier[0].output_tokens_per_s_per_user == 0 and .frontier[0].tpot_ms == null' "$TMP/st4.json" >/dev/null &&
     awk -F, -v b="$(jv st4 '.frontier[0].output_tokens_per_s_per_gpu')" 'NR > 1 { n++; if ($(NF - 3) > m) m = $(NF - 3) }
       END { d = m / b - 1; exit !(n > 0 && b > 0 && d < 1e-5 && d > -1e-5) }' "$TMP/out"; echo $?) \
  "osl 1: one frontier point, the most tokens/s per GPU ($(jv st4 '.frontier[0].output_tokens_per_s_per_gpu'))"
# 3 heads: only tp=1 runs; of the 11 deployments the 6 with a tp=2 or tp=4 replica refused;
# a config naming no model: its file's name in the launch command; a TPOT target alone
sed 's/"num_attention_heads": 6,/"num_attention_heads": 3,/; s/"num_key_value_heads": 2,/"num_key_value_heads": 3,/; s/"_name_or_path": "acme\/tiny-6h",//' \
  "$TMP/tiny.json" > "$TMP/h3.json"
n=""
for e in vllm:"vllm serve h3 --tensor-parallel-size 1 " sglang:"python3 -m sglang.launch_server --model-path h3 --tp-size 1 " trtllm:"trtllm-serve h3 --tp_size 1 "; do
  run_pm $SQ --model "$TMP/h3.json" --engine "${e%%:*}" --tpot 1000 --format json
  cp "$TMP/out" "$TMP/h3o.json"
  if [ "$rc" -eq 0 ] && [ "$(tally h3o)" = 110 ] && [ "$(jv h3o .pruned.layout)" = 60 ] && [ "$(jv h3o .tpot_target_ms)" = 1000 ] &&
     [ "$(jv h3o .ttft_target_ms)" = null ] && cmpf "$(jv h3o .best.tpot_ms)" '<=' 1000 &&
     jv h3o .best.launch | grep -q "^${e#*:}"; then
    n="$n ${e%%:*}"
  else
    diag "${e%%:*}: exit $rc: $(jv h3o .best.launch)" "$(head -c 300 "$TMP/h3o.json")"
  fi
done
ok $([ "$n" = " vllm sglang trtllm" ]; echo $?) \
  "3 heads on 4 GPUs: 6 of 11 deployments refused (60), the best within 1000 ms TPOT launched as h3 on each engine ($n)"
# 3 T4s: every deployment has a 1-GPU replica (tp=2 leaves one GPU), none fits
run_pm search --serve --model llama3.1-8b --gpu t4 --gpus 3 --isl 128 --osl 16 --jobs 1 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.configurations == 50 and .predicted == 50 and .pruned.layout == 0 and .pruned.saturation == 0 and .frontier == [] and .best == null' "$TMP/out" >/dev/null; echo $?) \
  "Llama-3.1-8B on 3 T4s: 5 deployments, each with a replica of one T4, 50 configurations out of memory, no frontier, no best"
expect_one_line 2 "--engine 'tgi': expected vllm, sglang or trtllm" "search --serve: an unknown engine refused" -- $SQ --model "$TMP/tiny.json" --engine tgi
expect_one_line 2 "bert-large: serving is modelled for decoder-only models" "search --serve: an encoder refused" -- $SQ --model bert-large
# The cache is held in whole pages of 16 tokens: a request longer than the whole pages hold,
# but not than the tokens, is a result that does not fit, not a refusal
run_pm serve --model llama3.1-8b --gpu l4 --isl 1000 --osl 16 --concurrency 1 --requests 1 --format json
K=$(jq -e '.kv_capacity_tokens' "$TMP/out")
isl=$((K / 16 * 16 - 16))        # isl + osl = the whole pages' tokens: one past them is needed
run_pm serve --model llama3.1-8b --gpu l4 --isl "$isl" --osl 16 --concurrency 1 --requests 1 --format json
ok $([ "$((K % 16))" -ne 0 ] && [ "$rc" -eq 0 ] && jq -e '.oom == true' "$TMP/out" >/dev/null && [ ! -s "$TMP/err" ]; echo $?) \
  "a request one token past the cache's whole pages (K = $K tokens): out of memory as a result, exit 0"
# a layout refused inside search --serve is one of its prunings, not an error on stderr
run_pm search --serve --model qwen2-7b --gpus 8 --isl 256 --osl 32 --no-disagg --jobs 1
ok $([ "$rc" -eq 0 ] && grep -q '^best' "$TMP/out" && [ ! -s "$TMP/err" ]; echo $?) \
  "search --serve on Qwen2-7B (28 heads: tp=8 refused inside): a best, nothing on stderr"
run_pm search --serve --model llama3.1-8b --gpu t4 --gpus 3 --isl 128 --osl 16 --jobs 1
ok $([ "$rc" -eq 0 ] && grep -q ' 50 configurations tried .*, 50 of them out of memory;' "$TMP/out" &&
     grep -q '^no deployment fits: every one is out of memory$' "$TMP/out" && ! grep -q 'targets' "$TMP/out"; echo $?) \
  "search --serve with nothing that fits says so, not that targets no one gave were missed"
# a pipeline that does not divide the layers: serving takes no split=, so none is offered
expect_one_line 2 "deepseek-v2-lite: pp=2 does not divide the 27 layers\$" \
  "serve: pp that does not divide the layers refused without offering split=" -- \
  serve --model deepseek-v2-lite --strategy tp=1,pp=2 --isl 128 --osl 16 --concurrency 1
# TPOT is a request's time from its first token to its last over the osl - 1 gaps between
# them: for one request alone it is its mean inter-token latency (the gaps' own mean)
run_pm serve --model llama3.1-8b --gpu h100 --isl 512 --osl 33 --concurrency 1 --requests 1 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.tpot_ms.mean > 0 and ((.tpot_ms.mean - .itl_ms.mean) | fabs) < 1e-9 * .tpot_ms.mean
                              and .iterations == 33' "$TMP/out" >/dev/null; echo $?) \
  "one request of 33 tokens: TPOT = the mean of its 32 inter-token gaps"
# An fp8 KV cache halves the decode attention's read: one decode step of a 4096-token
# request (roofline, memory-bound) is shorter by half of 32 layers x (2 x 32 x 128 query
# and output + 2 x 4097 x 8 x 128 cached K, V) x 2 bytes at the H100's bandwidth
decode_ms () {
  "$PERFMOD" serve --model llama3.1-8b --gpu h100 --isl 4096 --osl 4 --concurrency 1 --requests 1 \
    --predictor roofline -v -v "$@" 2>&1 >/dev/null | awk '/ 1 decodes,/ { sub(/ ms$/, ""); print $NF; exit }'
}
d16=$(decode_ms) d8=$(decode_ms --kv-dtype fp8) bw=$(gpu_key NVIDIA_H100_80GB_HBM3 mem_bw_gbps)
ok $(awk -v a="$d16" -v b="$d8" -v bw="$bw" 'BEGIN { want = 32 * (2 * 32 * 128 + 2 * 4097 * 8 * 128) * 2 / (bw * 1e9) * 1e3 / 2
       exit !(a != "" && b != "" && ((a - b) - want)^2 < 0.002^2) }'; echo $?) \
  "--kv-dtype fp8: a 4096-token decode step $d16 -> $d8 ms, half the cache's read (by hand)"
# a TPOT target no deployment meets: none is within the targets (the TPOT is tested too)
run_pm search --serve --model llama3.1-8b --gpus 2 --isl 256 --osl 16 --tpot 0.001 --jobs 1
ok $([ "$rc" -eq 0 ] && grep -q '^no deployment within the targets (--ttft 0, --tpot 0.001 ms)$' "$TMP/out" &&
     ! grep -q '^best' "$TMP/out"; echo $?) \
  "a TPOT target of 1 us: no deployment within it, no best"
# A speculative step verifies 1 + k tokens of each request: with k = 4 and 512 requests it
# runs the GEMM rows of a plain step of 2560 requests (compute-bound, roofline); attention
# over tiny contexts and the drafts' logits keep them within 15 %, far from a 512-row step
step_of () {  # step_of N ARGS: the last decode-only iteration of N requests, ms
  _n=$1
  shift
  "$PERFMOD" serve --model llama3.1-8b --gpu h100 --isl 16 --osl 9 --predictor roofline -v -v "$@" 2>&1 >/dev/null |
    awk -v n="$_n" '$0 ~ " 0 prompt tokens, " n " decodes," { v = $(NF - 1) } END { print v }'
}
s5=$(step_of 512 --concurrency 512 --requests 512 --spec ngram --spec-accept 0.01 --spec-tokens 4)
p5=$(step_of 2560 --concurrency 2560 --requests 2560 --max-batch 2560)
p1=$(step_of 512 --concurrency 512 --requests 512)
ok $(awk -v s="$s5" -v p="$p5" -v q="$p1" 'BEGIN { exit !(s > 0 && p > 0 && q > 0 && s / p > 0.85 && s / p < 1.05 && s > 3 * q) }'; echo $?) \
  "speculation k=4 over 512 requests: a step of 2560 rows ($s5 ms; 2560 plain $p5 ms, 512 plain $p1 ms)"
# --routing reaches every layout the search simulates, the first one too: Qwen3-30B-A3B's
# tp=1,dp=2 point at batch 1 (ttft the sixth field: the quoted layout holds a comma) under
# a uniform router is its rerun command's (which carries
# --routing uniform), not the default power law's
adp1 () { "$PERFMOD" search --serve --model qwen3-30b-a3b --gpus 2 --isl 1024 --osl 64 --no-disagg \
            --format csv --jobs 1 "$@" 2>/dev/null | awk -F, '/^"tp=1,dp=2",2,1,/ { print $6; exit }'; }
u=$(adp1 --routing uniform) p=$(adp1)
r=$("$PERFMOD" serve --model qwen3-30b-a3b --routing uniform --isl 1024 --osl 64 --strategy tp=1,dp=2 \
      --max-batch 1 --concurrency 2 --format csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ttft_ms_mean") c = i } NR == 2 { print $c }')
ok $(awk -v u="$u" -v p="$p" -v r="$r" 'BEGIN { exit !(u > 0 && p > 0 && (u / r - 1)^2 < 1e-10 && u != p) }'; echo $?) \
  "search --serve --routing uniform: the first layout's point ($u ms) is its rerun's ($r ms), not the default's ($p ms)"
finish
