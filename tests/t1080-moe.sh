#!/bin/sh
# t1080-moe.sh: a MoE layer as one MOE kernel: its work by hand at the roofline, the engine's kernel in --engine=NAME graphs, tile-mlp's network and the parts a predictor without one predicts.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 26

H100=NVIDIA_H100_80GB_HBM3
peak=$(gpu_key $H100 bf16_tflops)

# experts NODE_FIELD ARGS...: field 6 (fw_ms) or 10 (basis) of the experts node, predicted
# for Mixtral 8x7B's prefill of 4 x 512 tokens on an H100
experts () {
  f=$1; shift
  run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv "$@"
  awk -F, -v f="$f" '$2 == "layers_0_experts" { print $f }' "$TMP/out"
}

# 2048 tokens to the top 2 of 8 experts: 4096 assignments, 512 per expert, each through
# gate and up (4096 to 2 x 14336) and down (14336 to 4096): 2 x 4096 x 43008 x 4096 FLOPs,
# above the 8 x 43008 x 4096 bf16 weights over the bandwidth, so at the bf16 peak.
t=$(experts 6 --engine=sglang --predictor roofline)
ok $(awk -v t="$t" -v c="$peak" 'BEGIN { w = 2 * 4096 * 43008 * 4096 / (c * 1e12) * 1e3
       exit !(t != "" && (t / w - 1)^2 < 1e-12) }'; echo $?) \
  "--engine=sglang: the routed experts are one MOE kernel, its FLOPs at the bf16 peak ($t ms)"

# ep=2 within tp=2 (etp=1), one sequence of 512 tokens a micro-batch, a uniform router: a
# rank holds 4 of the experts whole, which 512 x 2 x 4 / 8 assignments reach; their weights, 4 x 43008 x 4096 bf16
# values, and the activations, 2 bytes x 512 x (5 x 4096 + 2 x 28672 + 2 x 14336 + 4096 / 2),
# over the bandwidth (memory-bound)
run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv \
  --engine=sglang --predictor roofline --strategy tp=2,ep=2,etp=1 --routing uniform
bw=$(gpu_key $H100 mem_bw_gbps)
ok $(awk -F, -v bw="$bw" '$4 == "layers_0_experts" { n++
       b = 2 * 4 * 43008 * 4096 + 2 * 512 * (5 * 4096 + 2 * 28672 + 2 * 14336 + 2048)
       want = b / (bw * 1e9) * 1e3; good = $7 == "512x4096x14336 e4/8 k2" && ($11 / want - 1)^2 < 1e-12 }
     END { exit !(n == 1 && good) }' "$TMP/out"; echo $?) \
  "ep=2: a rank's 4 experts, their weights and activations over the bandwidth (shape, time)"

# --dtype mxfp4 (GPT-OSS's checkpoint, vLLM's --quantization mxfp4): the same layer with the
# experts' weights at 0.53125 bytes (4 bits and a byte's scale per 32), the activations bf16:
# its 512 assignments' 2 x 512 x 43008 x 4096 FLOPs at the bf16 peak now take longer
t16=$(awk -F, '$4 == "layers_0_experts" { print $11 }' "$TMP/out")
run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv \
  --engine=sglang --predictor roofline --strategy tp=2,ep=2,etp=1 --routing uniform --dtype mxfp4
ok $(awk -F, -v bw="$bw" -v c="$peak" -v t16="$t16" '$4 == "layers_0_experts" { n++
       b = 0.53125 * 4 * 43008 * 4096 + 2 * 512 * (5 * 4096 + 2 * 28672 + 2 * 14336 + 2048)
       f = 2 * 512 * 43008 * 4096; want = (f / c / 1e12 > b / bw / 1e9 ? f / c / 1e12 : b / bw / 1e9) * 1e3
       good = $8 == "bf16" && b / bw / 1e9 * 1e3 < t16 && ($11 / want - 1)^2 < 1e-12 }
     END { exit !(n == 1 && good) }' "$TMP/out"; echo $?) \
  "--dtype mxfp4: a bf16 MoE kernel, its 4 experts' weights read at 0.53125 bytes"
# ... and holding them so: a rank's 32 x 4 experts of 3 x 4096 x 14336 weights, 1.46875
# bytes a weight fewer than bf16's, the rest alike
mem () {
  run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --format json \
    --engine=sglang --predictor roofline --strategy tp=2,ep=2,etp=1 --dtype "$1"
  jq -r '.predictions[0].memory_gib.weights' < "$TMP/out"
}
w16=$(mem bf16) w4=$(mem mxfp4)
ok $(awk -v a="$w16" -v b="$w4" 'BEGIN { want = 32 * 4 * 3 * 4096 * 14336 * 1.46875 / 2^30
       exit !(a > b && (a - b) / want - 1 < 1e-9 && (a - b) / want - 1 > -1e-9) }'; echo $?) \
  "--dtype mxfp4: the experts' weights a GPU holds at 0.53125 bytes ($w16 -> $w4 GiB)"
expect_fail 2 "--dtype mxfp4: .*this model has no routed experts" \
  "--dtype mxfp4 refused for a model without routed experts" -- \
  --model llama3.1-8b --mode inf --engine=vllm --dtype mxfp4
expect_fail 2 "--dtype mxfp4: .*give the engine" \
  "--dtype mxfp4 refused without an engine's MoE kernel to widen them" -- \
  --model mixtral-8x7b --mode inf --dtype mxfp4
expect_fail 2 "--dtype mxfp4: .*not training" "--dtype mxfp4 refused in training" -- \
  --model mixtral-8x7b --mode train --dtype mxfp4
# a predictor without a MoE model is handed the parts: their products read the MXFP4
# weights too (linreg floors a product at its bytes over the bandwidth: a quarter of them)
kpart () {
  run_pm kernel --op moe --tokens 64 --hidden 2880 --ffn 2880 --experts 128 --top-k 4 --gpu h100 \
    --dtype "$1" --predictor linreg --format csv
  awk -F, '$1 == "linreg" { print $3, $5 }' "$TMP/out"
}
p16=$(kpart bf16) p4=$(kpart mxfp4)
ok $(echo "$p16 $p4" | awk '{ exit !($1 == "bf16" && $3 == "mxfp4" && $4 > 0 && $4 < $2 / 2) }'; echo $?) \
  "the MoE layer's parts read MXFP4 weights too (linreg: $p16 -> $p4 ms)"
expect_fail 2 "--dtype mxfp4: Tesla_V100.* has no bf16 matrix units" \
  "kernel --dtype mxfp4 needs bf16 matrix units (a V100 has none)" -- \
  kernel --op moe --tokens 64 --hidden 2880 --ffn 2880 --experts 128 --top-k 4 --gpu v100 --dtype mxfp4

# --engine alone keeps the experts' GEMMs as separate kernels (no engine: no fused MoE kernel)
run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv --engine
ok $([ "$rc" -eq 0 ] && grep -q '^tile-mlp,layers_0_experts_gate_up_proj,Linear' "$TMP/out" &&
     ! grep -q ',MoE,' "$TMP/out"; echo $?) "--engine without a name: the experts' grouped GEMMs, no MOE kernel"

expect_fail 2 "--engine=foo: expected vllm, sglang or trtllm" "--engine=foo refused, the engines named" -- \
  --model mixtral-8x7b --mode inf --engine=foo

# tile-mlp's network learned each engine's kernel: the same layer differs between SGLang's
# Triton kernel and TensorRT-LLM's CUTLASS one, while the attention beside it does not
s=$(experts 6 --engine=sglang --predictor tile-mlp) r=$(experts 6 --engine=trtllm --predictor tile-mlp)
ok $(awk -v s="$s" -v r="$r" -v w="$t" 'BEGIN { exit !(s > w && r > w && (s / r - 1)^2 > 1e-4) }'; echo $?) \
  "tile-mlp: the MoE layer per engine (sglang $s, trtllm $r ms), each above the roofline's $t"
a1=$(awk -F, '$2 == "layers_0_core_attention" { print $6 }' "$TMP/out")
run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv \
  --engine=sglang --predictor tile-mlp
a2=$(awk -F, '$2 == "layers_0_core_attention" { print $6 }' "$TMP/out")
ok $([ -n "$a1" ] && [ "$a1" = "$a2" ]; echo $?) "the engine changes the MoE kernel only (attention $a1 = $a2 ms)"

# without the MoE network (moe_params=none) the layer is predicted as its parts, and says so
b=$(experts 10 --engine=sglang --predictor tile-mlp --plugin-opt tile-mlp:moe_params=none)
p=$(awk -F, '$2 == "layers_0_experts" { print $6 }' "$TMP/out")
ok $([ "$b" = "the MoE layer's parts" ] && awk -v p="$p" -v s="$s" 'BEGIN { exit !(p > 0 && p != s) }'; echo $?) \
  "moe_params=none: the layer as its parts ($p ms, basis '$b')"
expect_fail 2 "moe_params=/nonexistent.*/nonexistent: cannot read" "a missing moe_params file refused, named" -- \
  --model mixtral-8x7b --mode inf --engine=sglang --predictor tile-mlp \
  --plugin-opt tile-mlp:moe_params=/nonexistent

# the network's file is one of tile-mlp's, the one it predicts from by default (no basis note,
# an fp8 layer covered: no "no model of its own" note); it says what it was trained on
f="$top_srcdir/params/tile-mlp-moe.params"
run_pm kernel --op moe --tokens 64 --hidden 2048 --ffn 768 --experts 128 --top-k 8 --dtype fp8 \
  --engine trtllm --predictor tile-mlp --format csv
ok $([ "$rc" -eq 0 ] && awk -F, '$1 == "tile-mlp" && $2 == "moe" && $3 == "fp8" && $5 > 0 && $9 == "" { n++ }
                                 END { exit !(n == 1) }' "$TMP/out" && ! grep -q 'no model of its own' "$TMP/err" &&
     grep -aq '^command: perfmod train --predictor tile-mlp --data ../shared/moderndata --table moe --split train' "$f" &&
     grep -aq '^dtypes.moe: bf16,fp8' "$f"; echo $?) \
  "params/tile-mlp-moe.params: tile-mlp's default MoE network, fp8 covered, trained by its recorded command on the 80 %"

# The power-law rows (table moe_powerlaw): the busiest of the ep ranks under aiconfigurator's
# power-law routing carries more than the even share (the expected draw, seeded: the same on
# every run), so at ep=2 its layer is slower than the balanced one of the same shape
D="$TMP/pl/h100_sxm"
mkdir -p "$D"
dev="NVIDIA H100 80GB HBM3"
{ echo framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency
  echo "TRTLLM,1,$dev,moe,x,bfloat16,4096,256,128,2,8,1,2,balanced,0.01"
  echo "TRTLLM,1,$dev,moe,x,bfloat16,4096,256,128,2,8,1,2,power_law_1.2,0.012"
  echo "TRTLLM,1,$dev,moe,x,bfloat16,4096,256,128,2,8,1,2,power_law_x,0.012"; } >"$D/moe_perf.csv"
pl () { run_pm eval --data "$D/moe_perf.csv" --predictor roofline --per-op --format csv --table "$1"
        awk -F, 'NR > 1 { n++; t = $18 } END { print n, t }' "$TMP/out"; }
b=$(pl moe) p=$(pl moe_powerlaw) p2=$(pl moe_powerlaw)
ok $(echo "$b $p" | awk '{ exit !($1 == 1 && $3 == 1 && $4 > $2) }'; echo $?) \
  "power_law_1.2 at ep=2: one row under --table moe_powerlaw, slower than the balanced one ($p > $b ms); the malformed power_law_x left out"
ok $(echo "$p" | awk '{ exit !($1 == 1 && $2 > 0) }' && [ "$p" = "$p2" ]; echo $?) "the power-law load is the same on every run ($p)"
run_pm eval --data "$D/moe_perf.csv" --predictor roofline --per-op --format csv
ok $(awk -F, 'NR > 1 { t[$4]++ } END { exit !(t["moe"] == 1 && t["moe_powerlaw"] == 1) }' "$TMP/out"; echo $?) \
  "without --table both tables are read, each row under its own"
# A serving graph's router under --routing powerlaw:1.2 is the table's power_law_1.2 row:
# Mixtral's prefill at tp=2,ep=2,etp=1, a micro-batch of 512 tokens, sends their top 2 of 8
# experts to 2 ranks, as the row of those numbers does, and the roofline costs the same
# kernel (its busiest rank's load and reach from the same draws) to the digit
{ echo framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,num_experts,moe_tp_size,moe_ep_size,distribution,latency
  echo "TRTLLM,1,$dev,moe,x,bfloat16,512,4096,14336,2,8,1,2,power_law_1.2,1.0"; } >"$D/moe_perf.csv"
run_pm eval --data "$D/moe_perf.csv" --predictor roofline --per-op --format csv --table moe_powerlaw
tab=$(awk -F, 'NR == 2 { print $18 }' "$TMP/out")
run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv \
  --engine=trtllm --predictor roofline --strategy tp=2,ep=2,etp=1 --routing powerlaw:1.2
gra=$(awk -F, '$4 == "layers_0_experts" { print $11 }' "$TMP/out")
run_pm --model mixtral-8x7b --gpu h100 --mode inf --batch 4 --seq 512 --per-op --format csv \
  --engine=trtllm --predictor roofline --strategy tp=2,ep=2,etp=1 --routing uniform
uni=$(awk -F, '$4 == "layers_0_experts" { print $11 }' "$TMP/out")
ok $(awk -v t="$tab" -v g="$gra" -v u="$uni" 'BEGIN { exit !(t > 0 && u > 0 && (g / t - 1)^2 < 1e-10 && g > u) }'; echo $?) \
  "--routing powerlaw:1.2: the graph's MoE kernel is the power_law_1.2 row's ($gra = $tab ms), its busiest rank above the uniform router's ($uni ms)"

# perfmod kernel --op moe: the same MOE kernel the graphs build, the same numbers
run_pm kernel --op moe --tokens 2048 --hidden 4096 --ffn 14336 --experts 8 --top-k 2 \
  --engine sglang --predictor roofline,tile-mlp --format csv
kr=$(awk -F, '$1 == "roofline" { print $5 }' "$TMP/out") kt=$(awk -F, '$1 == "tile-mlp" { print $5 }' "$TMP/out")
ok $(awk -v a="$kr" -v b="$t" -v c="$kt" -v d="$s" 'BEGIN { exit !(a != "" && c != "" && (a / b - 1)^2 < 1e-12 && (c / d - 1)^2 < 1e-12) }'; echo $?) \
  "kernel --op moe: Mixtral's layer as predict --engine=sglang has it (roofline $kr, tile-mlp $kt ms)"
expect_fail 2 "--engine 'foo': expected vllm, sglang or trtllm" "kernel --op moe: an unknown engine refused" -- \
  kernel --op moe --tokens 8 --hidden 64 --ffn 64 --experts 8 --top-k 2 --engine foo
expect_fail 2 "--ep 3 does not divide the 8 experts" "kernel --op moe: ep must divide the experts" -- \
  kernel --op moe --tokens 8 --hidden 64 --ffn 64 --experts 8 --top-k 2 --ep 3
expect_fail 2 "kernel --op moe needs --top-k" "kernel --op moe: a missing dimension named" -- \
  kernel --op moe --tokens 8 --hidden 64 --ffn 64 --experts 8

# --- Megatron-Core's layer (kernels=te) for DeepSeek and gpt-oss ---
# Columns of --per-op --format csv: 4 node, 7 shape (b x m x k x n for a Linear), 10 count
te_ops () {
  run_pm --model "$1" --gpu h100 --mode train --batch 8 --seq 4096 --per-op --format csv --predictor roofline \
    --strategy "tp=1,dp=8,ep=8,kernels=te$2"
}
# DeepSeek-V2-Lite (27 layers, the first dense; 2048 wide; 16 heads; no query bottleneck;
# latent 512 + rope 64; nope 128 + rope 64 a query head, values 128; 64 experts of 1408,
# top 6; two shared) on 8 H100, experts over the 8 data-parallel ranks, 4096 tokens each
te_ops deepseek-v2-lite ",dispatcher=flex"
ok $([ "$rc" -eq 0 ] && awk -F, '
       function has(n, s, c) { return (n in shape) && shape[n] == s && count[n] == c }
       { shape[$4] = $7; count[$4] = $10; if ($4 ~ /ep_deepep/) dee[$4 " " $14]++ }
       END { exit !(has("decoder_layers_0_linear_q_proj", "1x4096x2048x3072", 1) &&
                    has("decoder_layers_0_linear_kv_down_proj", "1x4096x2048x576", 1) &&
                    has("decoder_layers_0_linear_kv_up_proj", "1x4096x512x4096", 1) &&
                    has("decoder_layers_0_core_attention", "1x16x4096x4096x192", 1) &&
                    has("decoder_layers_0_linear_fc1", "1x4096x2048x21888", 1) &&
                    has("decoder_layers_1_router", "1x4096x2048x64", 26) &&
                    has("decoder_layers_1_router_aux_loss", "4096x64", 26) &&
                    has("decoder_layers_1_experts_fc1", "1x3072x2048x2816", 208) &&
                    has("decoder_layers_1_shared_experts_linear_fc1", "1x4096x2048x5632", 26) &&
                    length(dee) == 4) }' "$TMP/out"; echo $?) \
  "deepseek-v2-lite in Megatron-Core's layer: MLA's projections, one dense layer, 26 routed with 8 x 3072 tokens, shared experts, DeepEP both ways"
# gpt-oss-20b: 24 layers alternating sliding (a 128-token window) and full, biased q/k/v and
# experts, 32 experts of 2880 top 4: 4 a rank, 4096 x 4 x 8 / 32 tokens each
te_ops gpt-oss-20b ""
ok $([ "$rc" -eq 0 ] && awk -F, '
       { t[$4] = $11; c[$4] = $10; s[$4] = $7; a[$4] = $13 }
       END { exit !(c["decoder_layers_0_core_attention"] == 12 && c["decoder_layers_1_core_attention"] == 12 &&
                    t["decoder_layers_0_core_attention"] < t["decoder_layers_1_core_attention"] / 4 &&
                    s["decoder_layers_0_experts_fc1"] == "1x4096x2880x5760" && c["decoder_layers_0_experts_fc1"] == 48 &&
                    a["decoder_layers_0_experts_fc1"] > 0 && a["decoder_layers_0_router"] > 0) }' "$TMP/out"; echo $?) \
  "gpt-oss-20b in Megatron-Core's layer: 12 sliding and 12 full layers, the window's attention cheaper, 4 biased experts a rank of 4096 tokens"
