#!/bin/sh
# t0860-serve.sh: perfmod serve, the serving simulation: its bad input, the engines' schedulers by hand (SGLang's prefill batches, the KV cache's admission and preemption), directions (TTFT with concurrency and prompt length, throughput saturating, disaggregation's trade), a closed loop's identity, the formats, and reproduce --table serving whose every row is a perfmod serve command that prints its numbers.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 59

# sv VAR ARGS...: perfmod serve ARGS as CSV into $TMP/VAR; col VAR NAME: a column of it
sv () { v=$1; shift; serve_to csv "$TMP/$v" "$TMP/$v.err" "$@"; }
col () {
  awk -F, -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == k) c = i } NR == 2 && c { print $c }' "$TMP/$1"
}

L8="--model llama3.1-8b --gpu h100"

# ---- bad input: one line, exit 2, nothing on stdout ----
expect_one_line 2 'one of --concurrency, --rate and --trace' "no load refused" -- serve $L8 --isl 128 --osl 16
expect_one_line 2 'one of --concurrency, --rate and --trace' "two loads refused" -- serve $L8 --isl 128 --osl 16 --concurrency 4 --rate 2
expect_one_line 2 'needs --isl and --osl' "no lengths refused" -- serve $L8 --concurrency 4
expect_one_line 2 "--engine 'tgi': expected vllm, sglang or trtllm" "an unknown engine named" -- serve $L8 --isl 128 --osl 16 --concurrency 4 --engine tgi
expect_one_line 2 'takes tp, pp, ep, etp, dispatcher and dp' "a training key in --strategy refused" -- serve $L8 --isl 128 --osl 16 --concurrency 4 --strategy tp=2,mbs=2
expect_one_line 2 'needs both --prefill and --decode' "--prefill without --decode refused" -- serve $L8 --isl 128 --osl 16 --concurrency 4 --prefill tp=1
expect_one_line 2 'spec-accept' "--spec without an acceptance refused" -- serve $L8 --isl 128 --osl 16 --concurrency 4 --spec eagle
expect_one_line 2 "--rate '-3'" "a negative rate refused" -- serve $L8 --isl 128 --osl 16 --rate -3
expect_one_line 2 "--concurrency" "--concurrency 0 refused" -- serve $L8 --isl 128 --osl 16 --concurrency 0
expect_one_line 2 "max_num_tokens 2048.*give --max-tokens" "a prompt above TensorRT-LLM's token budget refused" -- serve $L8 --isl 4096 --osl 16 --concurrency 2 --engine trtllm --max-tokens 2048
printf 'arrival_ms,isl\n0,128\n' > "$TMP/nocol.csv"
expect_one_line 2 "nocol\.csv:1: no column 'osl'" "a trace without osl names file:line" -- serve $L8 --trace "$TMP/nocol.csv"
printf 'arrival_ms,isl,osl\n0,128,16\n50,128,16\n20,128,16\n' > "$TMP/order.csv"
expect_one_line 2 "order\.csv:4: arrival_ms 20 is before" "a trace out of order names file:line" -- serve $L8 --trace "$TMP/order.csv"
printf 'arrival_ms,isl,osl\n0,many,16\n' > "$TMP/badn.csv"
expect_one_line 2 "badn\.csv:2: column 'isl'" "a bad number in a trace names file:line and the column" -- serve $L8 --trace "$TMP/badn.csv"
expect_one_line 2 'trace gives each request' "--trace with --isl refused" -- serve $L8 --trace "$TMP/badn.csv" --isl 5 --osl 5

# ---- SGLang's prefill batches by hand: prompts of 1024 tokens go 8 to a batch (its
# chunked_prefill_size of 8192 on an 80 GB GPU), each batch alone, so a closed loop of
# C clients keeps C/8 waves; the mean TTFT over C requests is (1 + ... + C/8) / (C/8)
# batches, 1, 1.5 and 2 of them for C = 8, 16, 24, beside the front end's fixed time: so
# TTFT(24) - TTFT(8) = 2 (TTFT(16) - TTFT(8)) = one batch ----
for c in 8 16 24; do sv sg$c $L8 --engine sglang --concurrency $c --isl 1024 --osl 128 --max-batch $c --requests $((c * 10)); done
t8=$(col sg8 ttft_ms_mean) t16=$(col sg16 ttft_ms_mean) t24=$(col sg24 ttft_ms_mean)
ok $(awk -v a="$t8" -v b="$t16" -v c="$t24" 'BEGIN { d = (c - a) / (2 * (b - a)) - 1;
       exit !(a > 0 && c - a > 100 && d < 1e-6 && d > -1e-6) }'; echo $?) \
  "sglang: TTFT at C=16 and 24 half a batch and a batch more than C=8's ($t8, $t16, $t24 ms)"
ok $(cmpf "$(col sg16 iterations)" '>' 0 && [ "$(col sg16 preemptions)" = 0 ] &&
     [ "$(col sg16 requests)" = 160 ]; echo $?) "sglang: every request of 160 served, none preempted"

# ---- directions (vLLM, Llama-3.1-8B on one H100) ----
for c in 8 64 256; do sv c$c $L8 --concurrency $c --isl 2048 --osl 256; done
ok $(cmpf "$(col c8 ttft_ms_mean)" '<' "$(col c64 ttft_ms_mean)" &&
     cmpf "$(col c64 ttft_ms_mean)" '<' "$(col c256 ttft_ms_mean)"; echo $?) \
  "TTFT grows with concurrency ($(col c8 ttft_ms_mean), $(col c64 ttft_ms_mean), $(col c256 ttft_ms_mean) ms)"
ok $(cmpf "$(col c8 tpot_ms_mean)" '<' "$(col c64 tpot_ms_mean)" &&
     cmpf "$(col c64 tpot_ms_mean)" '<' "$(col c256 tpot_ms_mean)"; echo $?) "TPOT grows with concurrency"
for i in 512 4096; do sv i$i $L8 --concurrency 32 --isl $i --osl 256; done
ok $(cmpf "$(col i512 ttft_ms_mean)" '<' "$(col i4096 ttft_ms_mean)"; echo $?) \
  "TTFT grows with the prompt ($(col i512 ttft_ms_mean) ms at 512 tokens, $(col i4096 ttft_ms_mean) at 4096)"
# throughput: up steeply from 8 to 64 clients, then it saturates (the GPU's decode rate)
sv c512 $L8 --concurrency 512 --isl 2048 --osl 256
sv c1024 $L8 --concurrency 1024 --isl 2048 --osl 256
ok $(awk -v a="$(col c8 output_tokens_per_s)" -v b="$(col c64 output_tokens_per_s)" \
         -v c="$(col c512 output_tokens_per_s)" -v d="$(col c1024 output_tokens_per_s)" \
         'BEGIN { exit !(a > 0 && b > 2.5 * a && d > 0 && d / c < 1.15 && d / c > 0.85) }'; echo $?) \
  "throughput saturates: $(col c8 output_tokens_per_s) -> $(col c64 output_tokens_per_s) tokens/s from 8 to 64 clients, $(col c512 output_tokens_per_s) -> $(col c1024 output_tokens_per_s) from 512 to 1024"
# a closed loop's identity (Little's law): C clients = requests/s x mean end-to-end time
ok $(awk -v c=64 -v x="$(col c64 requests_per_s)" -v e="$(col c64 e2e_ms_mean)" \
         'BEGIN { r = x * e / 1e3 / c; exit !(r > 0.9 && r < 1.1) }'; echo $?) \
  "closed loop: requests/s x e2e = the clients ($(col c64 requests_per_s) x $(col c64 e2e_ms_mean) ms vs 64)"
# the KV cache full: Llama-3.1-8B on an L40S (48 GB), 256 clients of 4096 + 4096 tokens
sv kvv --model llama3.1-8b --gpu l40s --concurrency 256 --isl 4096 --osl 4096 --requests 256 --engine vllm
sv kvt --model llama3.1-8b --gpu l40s --concurrency 256 --isl 4096 --osl 4096 --requests 256 --engine trtllm
cap=$(col kvv kv_capacity_tokens)
ok $(cmpf "$cap" '<' $((256 * 8192)) && cmpf "$(col kvv preemptions)" '>' 0 && cmpf "$(col kvv kv_peak)" '>' 0.95; echo $?) \
  "vLLM preempts when the cache is full ($(col kvv preemptions) preemptions, $cap tokens for 256 x 8192, peak $(col kvv kv_peak))"
ok $([ "$(col kvt preemptions)" = 0 ] && cmpf "$(col kvt ttft_ms_p99)" '>' "$(col kvt ttft_ms_p50)"; echo $?) \
  "TensorRT-LLM reserves each request's cache: no preemption, a queue instead (TTFT p99 $(col kvt ttft_ms_p99) ms)"
# the KV capacity by hand: vLLM allots 0.9 of the memory, less the weights, the activations
# of an iteration and 1 GB; a Llama-3.1-8B token caches 32 layers x 8 heads x 128 x 2 x 2 B
w=$(col kvv weights_gib)
ok $(awk -v w="$w" -v cap="$cap" 'BEGIN { per = 32 * 8 * 128 * 2 * 2; mem = 48 * 1073741824;
       lo = (0.9 * mem - w * 1073741824 - 1e9 - 4e9) / per; hi = (0.9 * mem - w * 1073741824 - 1e9) / per;
       exit !(w > 14 && w < 16 && cap > lo && cap < hi) }'; echo $?) \
  "vLLM's KV cache: 0.9 x 48 GiB less $w GiB of weights and the activations, 128 KiB a token ($cap tokens)"
sv oom --model llama3.1-70b --gpu h100 --dtype bf16 --concurrency 4 --isl 128 --osl 16
ok $([ "$(col oom oom)" = true ] && cmpf "$(col oom weights_gib)" '>' 80; echo $?) \
  "Llama-3.1-70B in bf16 on one H100: does not fit, a result (oom true, $(col oom weights_gib) GiB of weights)"
# GPT-OSS-120B's checkpoint (--dtype mxfp4) on one H100: its 36 x 128 experts, each
# 3 x 2880 x 2880 weights and 3 x 2880 biases, at 0.53125 bytes instead of bf16's 2; bf16
# does not fit, mxfp4 does
sv o16 --model gpt-oss-120b --gpu h100 --dtype bf16 --concurrency 4 --isl 128 --osl 16
sv o4 --model gpt-oss-120b --gpu h100 --dtype mxfp4 --concurrency 4 --isl 128 --osl 16
ok $([ "$(col o16 oom)" = true ] && [ "$(col o4 oom)" = false ] &&
     awk -v a="$(col o16 weights_gib)" -v b="$(col o4 weights_gib)" 'BEGIN {
       d = 36 * 128 * (3 * 2880 * 2880 + 3 * 2880) * (2 - 0.53125) / 2^30
       exit !(b < 80 && ((a - b) / d - 1)^2 < 1e-8) }'; echo $?) \
  "GPT-OSS-120B on one H100: bf16 does not fit ($(col o16 weights_gib) GiB), its MXFP4 experts do ($(col o4 weights_gib) GiB)"
# disaggregation trades TTFT for TPOT: the decodes run without prompts among them
sv agg --model qwen3-32b --gpu h100 --concurrency 64 --isl 4096 --osl 512 --strategy tp=2,dp=2
sv dis --model qwen3-32b --gpu h100 --concurrency 64 --isl 4096 --osl 512 --prefill tp=2 --decode tp=2
ok $(cmpf "$(col dis tpot_ms_mean)" '<' "$(col agg tpot_ms_mean)" && cmpf "$(col dis ttft_ms_mean)" '>' "$(col agg ttft_ms_mean)" &&
     [ "$(col dis gpus)" = 4 ] && [ "$(col agg gpus)" = 4 ]; echo $?) \
  "disaggregated on 4 GPUs: TPOT $(col dis tpot_ms_mean) ms < $(col agg tpot_ms_mean) aggregated, TTFT $(col dis ttft_ms_mean) > $(col agg ttft_ms_mean)"
# attention data parallelism: a worker's dp replicas share its experts (ep x etp = tp x dp):
# a prefill worker of 4 one-GPU replicas beside a decode worker of tp=4 is 8 GPUs, and an
# aggregated tp=2,dp=2 layout with its 128 experts over the 4 GPUs is 4
sv adpd --model qwen3-30b-a3b --gpu h100 --concurrency 16 --isl 1024 --osl 64 --prefill tp=1,dp=4,ep=4,etp=1 --decode tp=4,ep=4,etp=1
sv adpa --model qwen3-30b-a3b --gpu h100 --concurrency 16 --isl 1024 --osl 64 --strategy tp=2,dp=2,ep=4,etp=1
ok $([ "$(col adpd gpus)" = 8 ] && [ "$(col adpa gpus)" = 4 ] && cmpf "$(col adpd tpot_ms_mean)" '>' 0 &&
     cmpf "$(col adpa tpot_ms_mean)" '>' 0; echo $?) \
  "attention data parallelism in a prefill worker ($(col adpd gpus) GPUs) and aggregated ($(col adpa gpus) GPUs)"
run_pm serve --model qwen3-30b-a3b --gpu h100 --concurrency 16 --isl 1024 --osl 64 --strategy tp=2,dp=2,ep=4,etp=1
ok $([ "$rc" -eq 0 ] && grep -q "^assumed: .*; the experts over 2 replicas' 4 GPUs, each replica's tokens all-gathered and reduce-scattered (the replicas in step" "$TMP/out"; echo $?) \
  "attention data parallelism: the assumed line says the experts span the replicas, which run in step"
# attention-DP replicas in step, by hand: Qwen3-30B-A3B on 2 one-GPU replicas, 1024-token
# prompts.  Two clients: both replicas prefill together, the experts fed 2048 tokens, as
# the layout's forward of 2 x 1024 (perfmod --mode inf) has them.  One client: the other
# replica idles along and the experts are fed 1024 (TensorRT-LLM gathers each replica's
# own): that forward less its 48 layers' gather, experts and reduce-scatter at 2 x 1024
# plus theirs at 2 x 512.
Q3A="--model qwen3-30b-a3b --gpu h100 --dtype bf16"
adp_iter () {  # adp_iter ENGINE CLIENTS N: the Nth iteration's ms of perfmod serve -v -v
  "$PERFMOD" serve $Q3A --engine "$1" --isl 1024 --osl 3 --concurrency "$2" --requests "$2" \
    --strategy tp=1,dp=2,ep=2,etp=1 -v -v 2>&1 | awk -v n="$3" '/^serve: replica/ && ++i == n { print $(NF - 1) }'
}
adp_moe () {  # adp_moe SEQ: the experts' forward (count x fw_ms) in perfmod --per-op
  "$PERFMOD" $Q3A --mode inf --batch 2 --seq "$1" --predictor tile-mlp --engine=trtllm --fusion \
    --strategy tp=1,dp=2,ep=2,etp=1 --per-op 2>/dev/null |
    awk '$1 ~ /_(ep_allgather_fw|experts|ep_reduce_scatter_fw)$/ {
           for (i = 1; i < NF; i++) if ($i == "bf16") { s += $(i + 2) * $(i + 3); break } }
         END { printf "%.6f", s }'
}
run_pm $Q3A --mode inf --batch 2 --seq 1024 --predictor tile-mlp --engine=trtllm --fusion --strategy tp=1,dp=2,ep=2,etp=1
fw=$(awk '$1 == "step_ms" { print $2 }' "$TMP/out")
both=$(adp_iter trtllm 2 1) one=$(adp_iter trtllm 1 1) m1024=$(adp_moe 1024) m512=$(adp_moe 512)
ok $(awk -v b="$both" -v o="$one" -v f="$fw" -v a="$m1024" -v h="$m512" 'BEGIN {
       want = f - a + h; exit !(b + 0 > 0 && a > h && h > 0 && (b - f) ^ 2 < 1e-6 && (o - want) ^ 2 < 1e-6) }'; echo $?) \
  "attention-DP prefill in step: two replicas' $both ms = the forward's $fw; one's $one ms = $fw - $m1024 + $m512 (experts fed 1024 tokens, not 2048)"
# a decode step of one request while the other replica idles: vLLM pads every replica to
# the most tokens (its CUDA graphs), so the experts are fed 2, as with two requests;
# TensorRT-LLM and SGLang (a decode gathered at the sum when padding would double it) 1
ok $(cmpf "$(adp_iter vllm 1 2)" '==' "$(adp_iter vllm 2 3)"; echo $?) \
  "attention-DP decode in step, vLLM: one request's step $(adp_iter vllm 1 2) ms = two's, padded to the most"
ok $(cmpf "$(adp_iter trtllm 1 2)" '<' "$(adp_iter trtllm 2 3)" && cmpf "$(adp_iter sglang 1 2)" '<' "$(adp_iter sglang 2 3)"; echo $?) \
  "attention-DP decode in step, TensorRT-LLM and SGLang: one request's step < two's (experts fed 1 token, not 2)"
# the router's spread is said, and a bad one refused naming it
run_pm serve --model qwen3-30b-a3b --gpu h100 --concurrency 4 --isl 256 --osl 16 --strategy tp=2,ep=2,etp=1 --routing powerlaw:1.2
ok $([ "$rc" -eq 0 ] && grep -q "^assumed: .*; each step's tokens over the experts as a power law of exponent 1.2 (--routing)" "$TMP/out"; echo $?) \
  "--routing powerlaw:1.2: the assumed line says the router's exponent"
expect_one_line 2 "--routing 'zipf': expected uniform, powerlaw or powerlaw:A" "perfmod serve --routing zipf refused, named" -- \
  serve --model qwen3-30b-a3b --gpu h100 --concurrency 4 --isl 256 --osl 16 --routing zipf
# the KV transfer: 4096 tokens x 64 layers x 8 heads x 128 x 2 x 2 B over the prefill's
# 2 GPUs' NICs (gpus.d nic_gbps x nic_efficiency each) and one latency.
run_pm serve --model qwen3-32b --gpu h100 --concurrency 64 --isl 4096 --osl 512 --prefill tp=2 --decode tp=2 --format json
nic=$(gpu_key NVIDIA_H100_80GB_HBM3 nic_gbps) eff=$(gpu_key defaults nic_efficiency) lat=$(gpu_key defaults nic_latency_us)
ok $(jq -e '.transfer_ms > 0' "$TMP/out" >/dev/null && awk -v t="$(jq .transfer_ms "$TMP/out")" -v nic="$nic" -v eff="$eff" -v lat="$lat" 'BEGIN {
       b = 4096 * 64 * 8 * 128 * 2 * 2; ms = b / (2 * nic * 1e9 * eff) * 1e3 + lat / 1e3
       exit !(nic > 0 && eff > 0 && t - ms < 1e-6 && ms - t < 1e-6) }'; echo $?) \
  "the KV transfer: 1 GiB over 2 x $nic GB/s NICs at $eff, $lat us ($(jq .transfer_ms "$TMP/out") ms a request)"
# speculative decoding: fewer steps a token, a draft pass each; more tokens per user
sv spec $L8 --concurrency 8 --isl 1024 --osl 256 --spec eagle --spec-tokens 3 --spec-accept 0.7
sv nospec $L8 --concurrency 8 --isl 1024 --osl 256
ok $(awk -v a="$(col spec tpot_ms_mean)" -v b="$(col nospec tpot_ms_mean)" 'BEGIN { exit !(a > 0 && a < b / 1.5) }'; echo $?) \
  "EAGLE, 3 drafts accepted at 0.7 (2.5 tokens a step): TPOT $(col spec tpot_ms_mean) ms vs $(col nospec tpot_ms_mean)"
# a Poisson rate below what one GPU serves: its requests/s come back
sv rate $L8 --rate 4 --isl 1024 --osl 128 --requests 400
ok $(awk -v x="$(col rate requests_per_s)" 'BEGIN { exit !(x > 3.4 && x < 4.6) }'; echo $?) \
  "4 requests/s in, $(col rate requests_per_s) out"
# a trace: its requests, their lengths
printf 'arrival_ms,isl,osl\n0,512,32\n100,2048,64\n250,128,8\n' > "$TMP/tr.csv"
sv tr $L8 --trace "$TMP/tr.csv"
ok $([ "$(col tr requests)" = 3 ] && cmpf "$(col tr e2e_ms_p99)" '>' 0; echo $?) "a trace of 3 requests simulated"
sv det1 $L8 --concurrency 16 --isl 1024 --osl 128
sv det2 $L8 --concurrency 16 --isl 1024 --osl 128
ok $(cmpf "$(col det1 ttft_ms_mean)" '>' 0 && cmp -s "$TMP/det1" "$TMP/det2"; echo $?) "the same command, the same numbers"

# ---- the formats agree ----
run_pm serve $L8 --concurrency 16 --isl 1024 --osl 128 --format json
ok $([ "$rc" -eq 0 ] && jq -e '.ttft_ms.mean > 0 and .tpot_ms.p99 >= .tpot_ms.p50 and .engine == "vllm" and .requests == 160' "$TMP/out" >/dev/null &&
     awk -v a="$(jq .ttft_ms.mean "$TMP/out")" -v b="$(col det1 ttft_ms_mean)" 'BEGIN { d = a / b - 1; exit !(b > 0 && d < 1e-8 && d > -1e-8) }'; echo $?) \
  "JSON and CSV agree ($(jq .ttft_ms.mean "$TMP/out") ms)"
run_pm serve $L8 --concurrency 16 --isl 1024 --osl 128
ok $([ "$rc" -eq 0 ] && grep -q '^assumed: engine vLLM' "$TMP/out" &&
     awk -v m="$(col det1 ttft_ms_mean)" '$1 == "ttft_ms" { v = $2 } END { exit !(v > 0 && v - m < 0.01 && m - v < 0.01) }' "$TMP/out"; echo $?) \
  "the table says the engine assumed and the CSV's TTFT"

# ---- perfmod search --serve ----
SS="search --serve --model llama3.1-8b --gpu h100 --gpus 4 --isl 1024 --osl 128 --ttft 300 --tpot 20"
run_pm $SS --format csv
cp "$TMP/out" "$TMP/ss.csv"
# the frontier, by tokens/s per user falling, rises in tokens/s per GPU, and no point beats
# a frontier point on both
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 { n++; u[n] = $8; g[n] = $7; f[n] = ($9 == "true") }
       END { if (n < 10) exit 1; nf = 0
             for (i = 1; i <= n; i++) if (f[i]) { nf++
               for (j = 1; j <= n; j++) if (u[j] > u[i] && g[j] > g[i]) exit 1 }
             exit nf < 3 }' "$TMP/ss.csv"; echo $?) \
  "search --serve: $(awk 'END { print NR - 1 }' "$TMP/ss.csv") points, no point beats a frontier point on both throughputs"
run_pm $SS --format json --plot "$TMP/fr.svg"
cp "$TMP/out" "$TMP/ss.json"
best=$(jq -r '.best.output_tokens_per_s_per_gpu' "$TMP/ss.json")
ok $([ "$rc" -eq 0 ] && jq -e '.best.ttft_ms <= 300 and .best.tpot_ms <= 20 and (.frontier | length) >= 3' "$TMP/ss.json" >/dev/null &&
     awk -F, -v b="$best" 'NR > 1 && $5 <= 300 && $6 <= 20 && $7 > b + 1e-6 { bad = 1 } END { exit bad || b == "" }' "$TMP/ss.csv"; echo $?) \
  "search --serve: the best within 300 ms TTFT and 20 ms TPOT is the most tokens/s per GPU among those within them ($best)"
ok $(jq -e '.best.launch | test("^vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size [0-9]+ --pipeline-parallel-size [0-9]+ .*--max-num-seqs [0-9]+ --max-num-batched-tokens 8192")' "$TMP/ss.json" >/dev/null &&
     jq -e '.best.rerun | startswith("perfmod serve --model llama3.1-8b --gpu h100 --isl 1024 --osl 128 ")' "$TMP/ss.json" >/dev/null; echo $?) \
  "search --serve: the best comes with vLLM's launch command and perfmod serve's ($(jq -r .best.launch "$TMP/ss.json"))"
ok $([ "$(grep -c 'class="frontier"' "$TMP/fr.svg")" -eq "$(jq '.frontier | length' "$TMP/ss.json")" ] &&
     grep -q 'class="best"' "$TMP/fr.svg"; echo $?) "search --serve --plot: one marked point per frontier point, the best ringed"
expect_one_line 2 'needs --model, --gpus, --isl and --osl' "search --serve without lengths refused" -- search --serve --model llama3.1-8b --gpus 4

# ---- reproduce --table serving: each row the perfmod serve command a user types ----
h='id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms'
r='a,x; silicon_concurrency=8,trtllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,bf16,agg,1024,128,,,8,1,1,,1,1,191.0,7.94'
printf '%s\n%s\n%s\n' "$h" "$r" 'b,x,trtllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,bf16,agg,1024' > "$TMP/trunc.csv"
expect_one_line 2 "trunc\.csv:3: .*truncated" "a truncated row names file:line" -- reproduce --table serving --data "$TMP/trunc.csv"
printf '%s\n%s\n' "$h" "$(echo "$r" | sed 's/,1024,/,many,/')" > "$TMP/bad.csv"
expect_one_line 2 "bad\.csv:2: column 'isl'" "a bad number names file:line and the column" -- reproduce --table serving --data "$TMP/bad.csv"
# rows of every kind: the engines, an MoE with its experts over moe_ep, a GPU other than
# the H100, a disaggregated run, one on a system gpus.d does not know; and gpt-oss's kind:
# no attention_dp_size, the experts over tp=4's ranks (moe_tp 4), 32 clients = 4 x batch 8:
# attention DP, each of the 4 ranks a replica with a batch of 8
hd="$h,prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size"
{ echo "$hd"
  echo "$r,,,,,,,,,,,,,,"
  echo "v,x; silicon_concurrency=16,vllm,1,Qwen/Qwen3-32B,h100_sxm,bf16,agg,2048,256,,,16,2,1,,1,1,400.0,20.0,,,,,,,,,,,,,,"
  echo "s,x; silicon_concurrency=16,sglang,1,Qwen/Qwen3-32B,h100_sxm,bf16,agg,1024,128,,,16,2,1,,1,1,800.0,16.0,,,,,,,,,,,,,,"
  echo "q,x; silicon_concurrency=8,trtllm,1,Qwen/Qwen3-235B-A22B-FP8,h100_sxm,fp8,agg,1024,128,fp8_block,fp8_block,8,8,1,,1,8,300.0,12.0,,,,,,,,,,,,,,"
  echo "g,x; silicon_concurrency=8,vllm,1,meta-llama/Llama-3.1-8B-Instruct,a100_sxm,bf16,agg,1024,256,,,8,1,1,,1,1,150.0,9.0,,,,,,,,,,,,,,"
  echo "d,x; silicon_concurrency=32,sglang,1,Qwen/Qwen3-32B,h100_sxm,fp8,disagg,4096,512,fp8,,,,,,,,900.0,15.0,1,2,2,1,1,1,1,32,1,4,1,1,1,1"
  echo "u,x; silicon_concurrency=8,vllm,1,Qwen/Qwen3-32B,h999_sxm,bf16,agg,1024,128,,,8,2,1,,1,1,100.0,10.0,,,,,,,,,,,,,,"
  echo "o,x; silicon_concurrency=32,trtllm,1,openai/gpt-oss-120b,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,4,1,,4,1,500.0,20.0,,,,,,,,,,,,,,"
  echo "m,x; silicon_concurrency=8,vllm,1,openai/gpt-oss-120b,h100_sxm,fp4,agg,1024,1024,nvfp4,nvfp4,8,2,1,,2,1,80.0,6.0,,,,,,,,,,,,,,"
} > "$TMP/kinds.csv"
run_pm reproduce --table serving --data "$TMP/kinds.csv" --format csv --predictor tile-mlp
cp "$TMP/out" "$TMP/kinds.out"
cp "$TMP/err" "$TMP/kinds.err"
ok $([ "$rc" -eq 0 ] && [ "$(awk -F, '$1 == "serving" && $13 == "tile-mlp"' "$TMP/kinds.out" | wc -l)" -eq 8 ] &&
     grep -q ', 8 predicted, 1 skipped$' "$TMP/kinds.err" &&
     grep -q 'system h999_sxm: no gpus.d section' "$TMP/kinds.out"; echo $?) \
  "the eight kinds of run predicted, the unknown system skipped with its reason"
ok $(grep '^serving,m,' "$TMP/kinds.out" > "$TMP/m.row" && grep -q -- '--dtype mxfp4 ' "$TMP/m.row" &&
     grep -q ',mxfp4,' "$TMP/m.row"; echo $?) \
  "gpt-oss's nvfp4 row on an H100 (no fp4 units) runs its MXFP4 checkpoint: --dtype mxfp4"
ok $(grep '^serving,o,' "$TMP/kinds.out" > "$TMP/o.row" && grep -q -- '--strategy tp=1,pp=1,dp=4,ep=1,etp=4 ' "$TMP/o.row" &&
     grep -q -- '--max-batch 8 ' "$TMP/o.row"; echo $?) \
  "a row of 4 x its batch in clients, its experts over tp's ranks and no attention_dp_size, runs as attention DP of 4 (dp=4,ep=1,etp=4, a batch of 8 each)"
ok $(awk -F, '$1 == "serving" && $2 == "g" { f = 1; exit !($4 == "a100_sxm" && $15 > 0) } END { if (!f) exit 1 }' "$TMP/kinds.out"; echo $?) \
  "a run on an A100 is predicted as the A100 (gpu column a100_sxm)"
# every row's command, run as a user would, prints the row's numbers
n=0 bad=0
while IFS= read -r line; do
  id=$(echo "$line" | cut -d, -f2)
  cmd=$(echo "$line" | grep -o '"perfmod serve [^"]*"' | tr -d '"')
  [ -n "$cmd" ] || continue
  n=$((n + 1))
  # shellcheck disable=SC2086
  got=$("$PERFMOD" ${cmd#perfmod } --format csv 2>/dev/null | awk -F, 'NR == 2 { printf "%.6g %.6g", $1, $5 }')
  want=$(echo "$line" | awk -F, '{ printf "%.6g %.6g", $15, $18 }')
  [ -n "$got" ] && [ "$got" = "$want" ] || { bad=$((bad + 1)); diag "$id: table $want, command $got: $cmd"; }
done < "$TMP/kinds.out"
ok $([ "$n" -eq 8 ] && [ "$bad" -eq 0 ]; echo $?) "each row's perfmod serve command prints the table's TTFT and TPOT ($n rows, $bad differ)"
ok $(awk -F, '$1 == "serving" && $13 != "" { e = ($15 - $14) / $14 * 100; if (e < 0) e = -e; d = e - $16; if (d > 0.01 || d < -0.01) bad = 1; n++ } END { exit bad || n != 8 }' "$TMP/kinds.out"; echo $?) \
  "each row's TTFT error is |predicted - measured| / measured"

MODERN=${PERFMOD_MODERNDATA:-$top_srcdir/../shared/moderndata}
if [ -f "$MODERN/aiconfigurator/silicon_sample_h100_sxm.csv" ]; then
  run_pm reproduce --table serving --data "$MODERN" --format csv --predictor tile-mlp
  n=$(awk -F, 'NR > 1 && $1 == "serving" && $13 != ""' "$TMP/out" | wc -l)
  sk=$(awk -F, 'NR > 1 && $1 == "serving" && $13 == ""' "$TMP/out" | wc -l)
  ok $([ "$rc" -eq 0 ] && [ "$n" -ge 700 ] && [ $((n + sk)) -eq 917 ] && echo 0 || echo 1) \
    "reproduce --table serving: $n of the 917 runs predicted, $sk skipped"
  # every 25th predicted row's command, as a user would run it, prints the row's numbers
  cp "$TMP/out" "$TMP/all.out"
  n=0 bad=0
  awk '/^serving,/ && /"perfmod serve / { if (k++ % 25 == 0) print }' "$TMP/all.out" > "$TMP/sample"
  while IFS= read -r line; do
    cmd=$(echo "$line" | grep -o '"perfmod serve [^"]*"' | tr -d '"')
    n=$((n + 1))
    # shellcheck disable=SC2086
    got=$("$PERFMOD" ${cmd#perfmod } --format csv 2>/dev/null | awk -F, 'NR == 2 { printf "%.6g %.6g", $1, $5 }')
    want=$(echo "$line" | awk -F, '{ printf "%.6g %.6g", $15, $18 }')
    [ -n "$got" ] && [ "$got" = "$want" ] || { bad=$((bad + 1)); diag "table $want, command $got: $cmd"; }
  done < "$TMP/sample"
  ok $([ "$n" -ge 30 ] && [ "$bad" -eq 0 ]; echo $?) \
    "every 25th row of the measured runs: its perfmod serve command prints the table's TTFT and TPOT ($n rows, $bad differ)"
  # (gpt-oss's nvfp4 rows on the H100 run as its MXFP4 checkpoint; the rest lack a load)
  ok $(grep -Eq "^ +$sk  no batch_size or silicon_concurrency" "$TMP/err" && ! grep -q 'nvfp4' "$TMP/err" &&
       grep -q ", $sk skipped\$" "$TMP/err"; echo $?) \
    "skipped rows are listed with their reason ($sk) and counted by reason"
  # the SGLang runs keep their prefill batches' waves: within 20 % at the median
  med=$(awk -F, 'NR > 1 && $1 == "serving" && $5 == "sglang" && $3 == "qwen3-32b" && $13 != "" { print $16 }' "$TMP/out" |
        sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  ok $(awk -v m="$med" 'BEGIN { exit !(m > 0 && m <= 20) }'; echo $?) \
    "tile-mlp's median TTFT |error| on SGLang's Qwen3-32B runs within 20 % ($med %)"
  tpm=$(awk -F, 'NR > 1 && $1 == "serving" && $13 != "" && $3 != "deepseek-v3" { print $19 }' "$TMP/out" |
        sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  ok $(awk -v m="$tpm" 'BEGIN { exit !(m > 0 && m <= 12) }'; echo $?) \
    "tile-mlp's median TPOT |error| over the runs but DeepSeek's within 12 % ($tpm %)"
else
  for i in 1 2 3 4 5; do
    tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP moderndata not found at $MODERN (set PERFMOD_MODERNDATA)"
  done
fi
finish
