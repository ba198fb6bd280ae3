#!/bin/sh
# t1010-exit.sh: numbers out of range and sizes that would overflow refused, nonsense in inputs refused, and the exit-code contract (issue 23).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 80

# a model config: gpt2-large's with sed's edit
cfg () { sed "$2" "$top_srcdir/models/gpt2-large.json" >"$TMP/$1.json"; }

# --- Numbers beyond their range: refused with the range, not truncated
# to an int or multiplied past 2^63.
expect_one_line 2 "--batch '4611686018427387904': expected an integer from 1 to 2147483648" \
  "--batch 2^62 is refused with its range" -- --batch 4611686018427387904
expect_one_line 2 "--seq '4611686018427387904': expected an integer from 1 to 2147483648" \
  "--seq 2^62 is refused with its range" -- --seq 4611686018427387904
expect_one_line 2 "--nodes '9223372036854775807': expected an integer from 1 to 1048576" \
  "--nodes INT64_MAX is refused, not multiplied by the GPUs per node" -- \
  --nodes 9223372036854775807 --strategy tp=2
expect_one_line 2 "--gpus-per-node '4294967300': expected an integer from 1 to 1048576" \
  "--gpus-per-node 2^32+4 is refused, not read as 4" -- --gpus-per-node 4294967300 --strategy tp=2 --mode train
expect_one_line 2 "--epochs '2147483648': expected an integer from 1 to 1000000" \
  "--epochs 2^31 is refused, not read as 0 epochs" -- \
  train --predictor linreg --data "$TMP/none" --out "$TMP/e.params" --epochs 2147483648
ok $([ ! -e "$TMP/e.params" ] && ! ls "$TMP"/e.params.tmp* >/dev/null 2>&1 && echo 0 || echo 1) \
  "... and no parameter file is written"
expect_one_line 2 "--layers '65537': expected an integer from 1 to 65536" "--layers beyond 2^16 is refused" -- \
  --layers 65537
expect_one_line 2 "--gen '2147483649': expected an integer from 1 to 2147483648" "--gen beyond 2^31 is refused" -- \
  --gen 2147483649
expect_one_line 2 "--seed '-1': expected an integer from 0 to" "a negative --seed is refused" -- \
  train --predictor linreg --data "$TMP/none" --out "$TMP/e.params" --seed -1
expect_one_line 2 "--strategy: tp=1048577: expected an integer from 1 to 1048576" "a strategy degree beyond 2^20" -- \
  --strategy tp=1048577 --mode train

# --- Products: the GPUs of a cluster and a strategy, the tensors of a graph.
expect_one_line 2 "--nodes 1048576 x --gpus-per-node 2: more than 1048576 GPUs" \
  "--nodes x --gpus-per-node beyond 2^20 GPUs is refused" -- \
  --nodes 1048576 --gpus-per-node 2 --strategy tp=2 --mode train
expect_one_line 2 "tp=1024 x pp=1024 x dp=2: more than 1048576 GPUs" "tp x pp x dp beyond 2^20 GPUs is refused" -- \
  --strategy tp=1024,pp=1024,dp=2 --mode train
expect_one_line 2 "llama3-8b: batch 2147483648 x seq 2147483648, hidden size 4096, widths up to 128256: a tensor of the graph would hold more than 2\^61 elements" \
  "batch 2^31 x seq 2^31: the builder refuses tensors of 2^62 x 4096 elements" -- \
  --model llama3-8b --batch 2147483648 --seq 2147483648
expect_one_line 2 "--seq 2147483648: gpt2-large has 1024 learned positions" \
  "a sequence beyond learned positions is refused, naming them" -- --model gpt2-large --seq 2147483648
cfg vocab 's/"vocab_size": [0-9]*/"vocab_size": 9223372036854775800/'
expect_one_line 2 "vocab.json: key 'vocab_size' must be an integer from 1 to 1099511627776" \
  "a vocabulary near INT64_MAX is refused, not rounded over 2^63" -- --model "$TMP/vocab.json"
cfg embd 's/"n_embd": [0-9]*/"n_embd": 1099511627776/; s/"n_head": [0-9]*/"n_head": 1/'
expect_one_line 2 "embd: batch 4 x seq 1024, hidden size 1099511627776, widths up to 4398046511104: a tensor" \
  "n_embd 2^40: its 2^80-element weights are refused, not wrapped" -- \
  --model "$TMP/embd.json" --mode train --precision fp32
cfg hd 's/"n_head": [0-9]*/"n_head": 1048576, "head_dim": 2097152/'
expect_one_line 2 "hd.json: 1048576 heads x head_dim 2097152: an attention width beyond 1099511627776" \
  "heads x head_dim beyond 2^40 is refused at load" -- --model "$TMP/hd.json"
cfg layers 's/"n_layer": [0-9]*/"n_layer": 65537/'
expect_one_line 2 "layers.json: key 'n_layer' must be an integer from 1 to 65536" "n_layer beyond 2^16 is refused" -- \
  --model "$TMP/layers.json"
sed 's/"num_experts": [0-9]*/"num_experts": 65536/; s/"num_layers": [0-9]*/"num_layers": 64/;
     s/"num_decoder_layers": [0-9]*/"num_decoder_layers": 64/' "$top_srcdir/models/switch-xl4.json" >"$TMP/sw.json"
expect_one_line 2 "sw: 65536 experts in 64 sparse layers: more than 131072 expert blocks to build" \
  "a Switch model of 4M expert blocks is refused, not built (33 s and 8 GB)" -- --model "$TMP/sw.json"
# the pipeline schedule holds every micro-batch: 2^31 of them aborted "out of memory"
expect_one_line 2 "--batch 2147483648: 2147483648 micro-batches of dp=1 x mbs=1 per step; at most 1048576" \
  "a step of 2^31 micro-batches is refused, not allocated" -- \
  --mode train --strategy tp=1 --batch 2147483648 --seq 1
expect_one_line 2 "no configuration .* is left to predict .*or > 2\^20 of them" \
  "search: a global batch of 2^31 on 8 GPUs prunes every configuration by its micro-batches" -- \
  search --model gpt2-large --gpus 8 --global-batch 2147483648 --seq 1
# the limits are inclusive: the largest batch is predicted (and does not fit)
run_pm --model gpt2-large --batch 2147483648 --seq 1 --format csv
ok $([ $rc -eq 0 ] && awk -F, 'NR == 2 && $2 > 0 && $NF == "true" { f = 1 } END { exit !f }' "$TMP/out" &&
     echo 0 || echo 1) "--batch 2^31 itself is predicted: exit 0, out of memory in the oom column"

# --- Nonsense in an op graph: sizes that are not sizes, numbers that are not finite.
H='Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape'
og () {  # og NAME KERNEL ARGS [INPUTSHAPES] [OUTPUTSHAPE]: a one-node graph
  printf '%s\nlin,Linear,"[[%s, %s]]",[],[],set(),set(),"%s","%s"\n' "$H" "'$2'" "$3" \
    "${4:-[(64, 256)]}" "${5:-(64, 512)}" >"$TMP/$1.csv"
}
og neg Linear "(64, -256, 512)"
expect_one_line 2 "neg.csv:2: node lin: Linear: dimension -256 is not from 1 to 1099511627776" \
  "a negative Linear dimension is refused with file:line, not predicted as 0 ms" -- --opgraph "$TMP/neg.csv"
og zero Linear "(64, 0, 512)"
expect_one_line 2 "zero.csv:2: node lin: Linear: dimension 0 is not from 1" "a zero Linear dimension is refused" -- \
  --opgraph "$TMP/zero.csv"
og bmm BMM "(8, 64, 64, -1)"
expect_one_line 2 "bmm.csv:2: node lin: BMM: dimension -1 is not from 1" "a negative BMM dimension is refused" -- \
  --opgraph "$TMP/bmm.csv"
og huge Linear "(64, 256, 1099511627777)"
expect_one_line 2 "huge.csv:2: node lin: Linear: dimension 1099511627777 is not from 1 to 1099511627776" \
  "a Linear dimension beyond 2^40 is refused" -- --opgraph "$TMP/huge.csv"
og mem MEM "[(64, -256)]"
expect_one_line 2 "mem.csv:2: node lin: MEM: dimension -256 is not from 0" "a negative copy shape is refused" -- \
  --opgraph "$TMP/mem.csv"
og shape Linear "(64, 256, 512)" "[(64, -256)]"
expect_one_line 2 "shape.csv:2: node lin: InputShapes: dimension -256 is not from 0" "a negative input shape is refused" -- \
  --opgraph "$TMP/shape.csv"
printf '%s\ninput_ids,misc,[],[],[],set(),set(),[],"(0, 512)"\n' "$H" >"$TMP/ids.csv"
expect_one_line 2 "ids.csv:2: node input_ids: batch 0 x seq 512: expected a batch from 1 to 2147483648" \
  "a traced batch of 0 is refused" -- --opgraph "$TMP/ids.csv"
og inf Linear "(64, 256, 512)" "[(64, inf)]"
expect_one_line 2 "inf.csv:2: column InputShapes: unexpected character" "an op graph's inf is refused with file:line" -- \
  --opgraph "$TMP/inf.csv"
og nan Linear "(64, 256, nan)"
expect_one_line 2 "nan.csv:2: column FwOps: unexpected character" "an op graph's nan is refused with file:line" -- \
  --opgraph "$TMP/nan.csv"
og big Linear "(64, 256, 1e999)"
expect_one_line 2 "big.csv:2: column FwOps: bad number" "an op graph's 1e999 (+Inf as a double) is refused" -- \
  --opgraph "$TMP/big.csv"

# --- ... in a model config and on the command line.
for v in NaN Infinity -Infinity 1e999; do
  cfg nf "s/\"n_embd\": [0-9]*/\"n_embd\": $v/"
  expect_one_line 2 "nf.json:7: (invalid token|real number overflow)" "a model config's n_embd $v is refused with file:line" -- \
    --model "$TMP/nf.json"
done
expect_one_line 2 "--batch 'inf': expected an integer" "--batch inf is refused" -- --batch inf
expect_one_line 2 "--seq 'nan': expected an integer" "--seq nan is refused" -- --seq nan
expect_one_line 2 "--tokens 'inf': expected a number" "search --tokens inf is refused" -- \
  search --model gpt2-large --gpus 8 --global-batch 8 --tokens inf
expect_one_line 2 "--bytes 'nan': expected a number of bytes" "kernel --bytes nan is refused" -- \
  kernel --op collective --coll all_reduce --bytes nan --ranks 8

# --- habitat's reference kernels: read before training, not after minutes of it.
# kernels of both matrix classes on NeuSight's five training GPUs
mkdir -p "$TMP/train"
awk -v dir="$TMP/train" 'BEGIN {
  split("Tesla P4,Tesla P100-PCIE-16GB,Tesla V100-PCIE-32GB,Tesla T4,NVIDIA A100-PCIE-40GB", g, ",")
  mm = "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K"
  print mm > (dir "/bmm.csv"); print mm > (dir "/linear.csv")
  for (i = 1; i <= 5; i++)
    for (j = 1; j <= 10; j++) {
      printf "bmm,%g,%s,ampere_sgemm_128x64_nn,1,1,%d,%d,%d,128,%d\n", 0.01 * j * i, g[i], j, j, 64 * j, 32 + 8 * j > (dir "/bmm.csv")
      printf "linear,%g,%s,ampere_sgemm_64x64_tn,1,1,1,1,%d,128,%d\n", 0.01 * j * i, g[i], 64 * j, 32 + 8 * j > (dir "/linear.csv")
    }
}'
expect_one_line 2 "^perfmod: /nonexistent: cannot read" "train habitat --reference /nonexistent: exit 2 naming it, before training" -- \
  train --predictor habitat --data "$TMP/train" --reference /nonexistent --out "$TMP/h.params" --epochs 2
ok $([ ! -e "$TMP/h.params" ] && ! ls "$TMP"/h.params.tmp* >/dev/null 2>&1 && echo 0 || echo 1) \
  "... and leaves no parameter file"
expect_one_line 2 "habitat needs --reference FILE" "train habitat without --reference: exit 2, before training" -- \
  train --predictor habitat --data "$TMP/train" --out "$TMP/h.params" --epochs 2

# --- The contract: bad usage and bad input exit 2 with one line and no output.
expect_one_line 2 "unrecognized option '--frobnicate' \(try 'perfmod --help'\)" "an unknown option: one line" -- --frobnicate
expect_one_line 2 "option '--batch' requires an argument" "an option without its argument: one line" -- --batch
expect_one_line 2 "unrecognized option '--frobnicate' \(try 'perfmod kernel --help'\)" "kernel: an unknown option" -- \
  kernel --frobnicate
expect_one_line 2 "option '--gpus' requires an argument \(try 'perfmod search --help'\)" "search: a missing argument" -- \
  search --gpus
expect_one_line 2 "--batch '0': expected an integer from 1 to 2147483648" "--batch 0" -- --batch 0
expect_one_line 2 "unknown command 'frob'" "an unknown command" -- frob
expect_one_line 2 "unexpected argument 'extra'" "a stray argument" -- predict extra
expect_one_line 2 "--model 'nosuch': no such built-in model" "an unknown model" -- --model nosuch
expect_one_line 2 "--gpu 'nosuch': no such GPU" "an unknown GPU" -- --gpu nosuch
expect_one_line 2 "--predictor 'nosuch': no such predictor plugin" "an unknown predictor" -- --predictor nosuch
expect_one_line 2 "--format 'yaml': expected table, csv or json" "an unknown format" -- --format yaml
expect_one_line 2 "--strategy: unknown strategy key 'foo'" "an unknown strategy key" -- --strategy foo=1
expect_one_line 2 "gpt2-large: tp=3 does not divide the 20 attention heads" "a strategy the model cannot take" -- \
  --strategy tp=3
expect_one_line 2 "--plugin-path '/nonexistent': not a directory" "a --plugin-path that is not there is refused, not ignored" -- \
  --plugin-path /nonexistent
expect_one_line 2 "/nonexistent.csv: cannot open the op graph: No such file" "a missing op graph names it" -- \
  --opgraph /nonexistent.csv
expect_one_line 2 "--plugin-opt 'linreg:params=/nonexistent': /nonexistent: cannot read" "a missing parameter file names it" -- \
  --predictor linreg --plugin-opt linreg:params=/nonexistent

# --- Runtime failures exit 1 with a line saying why.
expect_one_line 1 "habitat: kernel class 8 has no Habitat model" "a predictor that cannot predict a kernel: exit 1" -- \
  kernel --op attention --batch 1 --seq 128 --heads 8 --head-dim 64 --predictor habitat --gpu a100
if [ -w /dev/full ]; then
  "$PERFMOD" --format csv >/dev/full 2>"$TMP/err"
  rc=$?
  ok $([ $rc -eq 1 ] && grep -q "^perfmod: standard output: No space left on device" "$TMP/err" && echo 0 || echo 1) \
    "standard output that cannot be written: exit 1, said (was exit 0)"
  [ $rc -eq 1 ] || diag "exit $rc" "$(cat "$TMP/err")"
else
  ok 0 "# SKIP no /dev/full"
fi

# --- Out of memory is a result: exit 0, marked in every format.
OOM="--model gpt2-large --batch 4096 --seq 1024"
run_pm $OOM
ok $([ $rc -eq 0 ] && grep -q "OOM: does not fit" "$TMP/out" && echo 0 || echo 1) "OOM: exit 0, table says OOM"
run_pm $OOM --format csv
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -q ',memory_gib,oom$' &&
     awk -F, 'NR == 2 && $(NF - 1) > 85.9 && $NF == "true" { f = 1 } END { exit !f }' "$TMP/out" &&
     echo 0 || echo 1) "OOM: exit 0, CSV's oom column true"
run_pm $OOM --format json
ok $([ $rc -eq 0 ] && grep -q '"oom": true' "$TMP/out" && echo 0 || echo 1) "OOM: exit 0, JSON oom true"
run_pm --model gpt2-large --batch 4 --seq 1024 --format csv
ok $([ $rc -eq 0 ] && awk -F, 'NR == 2 && $NF == "false" { f = 1 } END { exit !f }' "$TMP/out" &&
     echo 0 || echo 1) "a run that fits: oom false"
DIST="--model gpt3-175b --batch 1 --mode train --strategy tp=2"
run_pm $DIST
ok $([ $rc -eq 0 ] && grep -q "OOM: does not fit" "$TMP/out" && echo 0 || echo 1) \
  "OOM under a strategy (175B on 2 GPUs): exit 0, table says OOM"
run_pm $DIST --format csv
ok $([ $rc -eq 0 ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
                               NR == 2 && $c["oom"] == "true" { f = 1 } END { exit !f }' "$TMP/out" &&
     echo 0 || echo 1) "... CSV's oom column true"
run_pm $DIST --format json
ok $([ $rc -eq 0 ] && grep -q '"oom": true' "$TMP/out" && echo 0 || echo 1) "... JSON oom true"
# --- No silent defaults (issue 34): wrong JSON types and zero counts refused by key, a
# trace's mode checked, no kernel faster than the GPU allows, no abbreviated options.
cfg tie 's/"vocab_size"/"tie_word_embeddings": 1, "vocab_size"/'
expect_one_line 2 "tie.json: key 'tie_word_embeddings' must be true or false" \
  "a Hugging Face boolean given as 1 is refused by key (it was read as the default)" -- --model "$TMP/tie.json"
sed 's/"num_key_value_heads": [0-9]*/"num_key_value_heads": 0/' "$top_srcdir/models/llama3.1-8b.json" >"$TMP/kv0.json"
expect_one_line 2 "kv0.json: key 'num_key_value_heads' must be an integer from 1 to" \
  "num_key_value_heads 0 is refused (it was multi-head attention)" -- --model "$TMP/kv0.json"
sed 's/"n_routed_experts": [0-9]*/"n_routed_experts": 0/' "$top_srcdir/models/deepseek-v3.json" >"$TMP/e0.json"
expect_one_line 2 "e0.json: key 'n_routed_experts' must be an integer from 1 to 65536 \\(model_type deepseek_v3 has experts\\)" \
  "n_routed_experts 0 is refused (it was a dense model)" -- --model "$TMP/e0.json"
sed 's/"vocab_size"/"attention_bias": "yes", "vocab_size"/' "$top_srcdir/models/qwen3-32b.json" >"$TMP/bias.json"
run_pm --model "$TMP/bias.json"
ok $([ "$rc" -eq 2 ] && grep -q "bias.json: key 'attention_bias' must be true or false" "$TMP/err"; echo $?) \
  "attention_bias as a string is refused by key"
sed 's/"vocab_size"/"attention_bias": true, "vocab_size"/' "$top_srcdir/models/llama3.1-8b.json" >"$TMP/lbias.json"
expect_one_line 2 "lbias.json: key 'attention_bias': true: perfmod builds this model type's layers without biases" \
  "a Llama config with attention_bias true is refused (it was built without the biases)" -- --model "$TMP/lbias.json"
awk 'BEGIN { print "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape"
  print "input_ids,misc,[],[],[],set(),set(),[],\"(8, 512)\""
  print "n1,VECadd,\"[[\047VECadd\047, [8, 1024]]]\",[],[],set(),set(),\"[(8, 1024)]\",\"(8, 1024)\"" }' >"$TMP/inf.csv"
expect_one_line 2 "--mode train: .*inf.csv has no backward ops .*: an inference trace; use --mode inf" \
  "an inference trace with --mode train is refused (it was a step with no backward)" -- \
  --opgraph "$TMP/inf.csv" --mode train
run_pm --opgraph "$TMP/inf.csv" --mode inf --format csv
ok $([ "$rc" -eq 0 ] && grep -q '^tile-mlp,' "$TMP/out"; echo $?) "... and predicts with --mode inf"
run_pm kernel --op gemm --m 8192 --n 8192 --k 8192 --gpu h100 --dtype bf16 --predictor habitat,linreg,tile-mlp,roofline --format csv
ok $([ "$rc" -eq 0 ] && awk -F, 'NR > 1 { n++; if ($7 > 989.5) bad++ } END { exit !(n == 4 && !bad) }' "$TMP/out"; echo $?) \
  "no predictor's bf16 GEMM beats the H100's dense peak (989.4 TFLOP/s)"
expect_one_line 2 "unrecognized option '--mode' \\(options are not abbreviated: '--model'\\?" \
  "search --mode is not taken as --model" -- search --mode gpt2-large --gpus 8 --global-batch 8
expect_one_line 2 "unrecognized option '--glob' \\(options are not abbreviated: '--global-batch'\\?" \
  "an abbreviated option with its value apart is refused too" -- search --model gpt2-large --gpus 8 --glob 8
# gpus.d: a number past any GPU's, and one GPU's section twice in a file, are refused (a
# later file refines an earlier one's GPU key by key: t0310)
mkdir -p "$TMP/dd"
cp -r "$top_srcdir/gpus.d" "$top_srcdir/strategies.d" "$top_srcdir/tiles.d" "$top_srcdir/models" "$TMP/dd/"
printf '[mine]\nsms = 10\nfp32_gflops = 1000\nmem_gb = 1e308\nmem_bw_gbps = 100\n' >"$TMP/dd/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/dd" expect_one_line 2 "99-local.ini:4: mem_gb: '1e308' is not a positive number \\(at most 1e12\\)" \
  "gpus.d: mem_gb = 1e308 is refused" -- gpus
printf '[mine]\nsms = 10\nfp32_gflops = 1000\nmem_gb = 8\nmem_bw_gbps = 100\n[other]\nsms = 1\n[mine]\nsms = 12\nmem_gb = 9\n' >"$TMP/dd/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/dd" expect_one_line 2 "99-local.ini:8: \\[mine\\] again \\(first at .*99-local.ini:1\\)" \
  "gpus.d: a section repeated in its file is said once, not merged" -- gpus
finish
