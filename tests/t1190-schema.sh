#!/bin/sh
# t1190-schema.sh: every command's JSON validates against doc/perfmod.schema.json (one name, one unit, one shape for the same thing; null for what is absent), the schema refuses what drifts from it, and memory is in the datasheets' GiB.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
SCHEMA="$top_srcdir/doc/perfmod.schema.json"
python3 -c 'import jsonschema' 2>/dev/null ||
  skip_all "python3's jsonschema module not found (Debian: apt-get install python3-jsonschema)"
plan 29

# valid FILE: 0 when FILE's JSON validates against the schema; the errors as diagnostics
valid () {
  python3 - "$SCHEMA" "$1" >"$TMP/verr" 2>&1 <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.load(open(sys.argv[2]))))
for e in errors[:5]:
    print("/".join(str(p) for p in e.absolute_path), e.message[:300])
sys.exit(1 if errors else 0)
PY
  r=$?
  [ "$r" -eq 0 ] || diag "$(cat "$TMP/verr")"
  return $r
}
# check NAME ARGS...: perfmod ARGS --format json exits 0 and its answer validates; kept as $TMP/NAME.json
check () {
  name=$1
  shift
  run_pm "$@" --format json
  cp "$TMP/out" "$TMP/$name.json"
  ok $([ "$rc" -eq 0 ] && [ -s "$TMP/out" ] && valid "$TMP/out"; echo $?) "$name: perfmod $* --format json validates"
}

G="--model gpt3-2.7b --gpu h100"
check predict $G --batch 2 --seq 512 --predictor roofline,tile-mlp
check predict-per-op $G --batch 1 --seq 256 --per-op
check train $G --mode train --batch 16 --seq 1024 --strategy tp=2,pp=2,recompute=selective --nodes 1
check train-per-op $G --mode train --batch 16 --seq 1024 --strategy tp=2,pp=2 --per-op=0
check moe-train --model mixtral-8x7b --gpu h100 --mode train --batch 8 --seq 4096 --strategy tp=2,sp=1,dp=4,ep=8,etp=1,dispatcher=flex,kernels=te,recompute_modules=layernorm+moe_act
check gen --model llama3.1-8b --gpu h100 --gen 16 --batch 4 --seq 512 --strategy tp=2
check gpus $G --batch 2 --seq 512 --gpu h100,h200
check search search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --top 3 --fix vp=1
check search-gpus search --model gpt3-2.7b --gpu h100,h200 --gpus 16 --global-batch 64 --seq 2048 --top 3 --fix vp=1,tp=2
check search-cost search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --top 2 --fix vp=1,tp=2 --tokens 1e10 --price-per-gpu-hour 2
check search-serve search --serve --model llama3.1-8b --gpu h100 --gpus 2 --isl 512 --osl 64 --jobs 1
check serve serve --model llama3.1-8b --gpu h100 --isl 512 --osl 64 --concurrency 8 --strategy tp=2
check serve-disagg serve --model llama3.1-8b --gpu h100 --isl 512 --osl 64 --concurrency 8 --prefill tp=1 --decode tp=1
check kernel kernel --op gemm --gpu h100 --m 4096 --n 4096 --k 4096 --predictor roofline,tile-mlp
check collective kernel --op collective --coll all_reduce --bytes 134217728 --ranks 8 --gpu h100
check models models
check models-one models --model deepseek-v3
# eval and reproduce: their CSV's rows by its names (a table of two GEMMs, the published runs)
T="$TMP/md/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$T"
{ echo framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
  echo "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,4096,4096,4096,0.2"
  echo "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,1024,4096,4096,0.06"; } | gzip >"$T/gemm_perf.csv.gz"
check eval eval --data "$TMP/md" --predictor roofline,tile-mlp
check eval-per-op eval --data "$TMP/md" --predictor roofline --per-op
check reproduce reproduce --table published --predictor roofline

expect_one_line 2 "--format 'xml': eval prints table, csv or json" "eval --format xml: refused, one line" -- \
  eval --data "$TMP/md" --format xml
expect_one_line 2 "--format 'xml': reproduce prints table, csv or json" "reproduce --format xml: refused, one line" -- \
  reproduce --table published --format xml

# the names say the same thing everywhere
ok $(jq -e '.predictions[] | select(.predictor == "roofline") | .spread_ms == null' "$TMP/predict.json" >/dev/null &&
     jq -e '.predictions[0].note == null and .predictions[0].spread_ms == null and .predictions[0].low_ms == null' \
       "$TMP/kernel.json" >/dev/null; echo $?) \
  "null where a value is absent: the roofline's spread and interval, an empty note"
ok $(jq -e '(.rows | length) == 2 and all(.rows[]; .rows == 2 and .table == "gemm" and (.mape_pct | type) == "number")' \
       "$TMP/eval.json" >/dev/null &&
     jq -e '(.rows | length) == 2 and all(.rows[]; .measured_ms > 0 and .low_ms == null)' "$TMP/eval-per-op.json" >/dev/null &&
     jq -e '(.rows | length) > 20 and all(.rows[]; .step_ms > 0 and .published_step_ms > 0 and (.oom | type) == "boolean")' \
       "$TMP/reproduce.json" >/dev/null; echo $?) \
  "eval and reproduce: the CSV's rows typed (numbers, booleans, null), step_ms beside published_step_ms"
ok $(jq -e '.models[] | select(.model == "bert-large") | .experts == null and .top_k == null and .kv_bytes_per_token == null' \
       "$TMP/models.json" >/dev/null; echo $?) "a dense encoder: experts, top_k and its KV bytes null, not 0"
# an H100's 80 GB are 80 GiB (2^30 bytes): the datasheet's number, in predict, serve and --gpu lists
ok $(jq -e '.predictions[0].memory_gib.capacity == 80' "$TMP/predict.json" >/dev/null &&
     jq -e '.memory_gib.capacity == 80' "$TMP/serve.json" >/dev/null &&
     jq -e '.by_gpu[1].predictions[0].memory_gib.capacity == 141' "$TMP/gpus.json" >/dev/null; echo $?) \
  "memory in GiB: an H100's capacity is 80, an H200's 141, as their datasheets say"
# the strategy is one object: search's best reruns through its spec to predict's same object
spec=$(jq -r '.best[0].strategy.spec' "$TMP/search.json")
run_pm --model gpt3-2.7b --gpu h100 --mode train --batch 64 --seq 2048 --nodes 2 --strategy "$spec" --format json
ok $([ "$rc" -eq 0 ] && jq -e --slurpfile s "$TMP/search.json" \
       '.strategy | del(.gpus, .nodes, .microbatches) == $s[0].best[0].strategy' "$TMP/out" >/dev/null; echo $?) \
  "search's strategy object is predict's, key for key, once its spec is rerun ($spec)"
ok $(jq -e '.strategy.spec == "tp=2,pp=1,dp=1,ep=1" and .prefill == null and .decode == null' "$TMP/serve.json" >/dev/null &&
     jq -e '.strategy == null and .prefill.tp == 1 and .decode.spec == "tp=1,pp=1,dp=1,ep=1"' "$TMP/serve-disagg.json" >/dev/null
     echo $?) "serve: the layouts as strategy objects, null where the run has none"

# the schema refuses what drifts: an old name, a string for the strategy, a unit suffix lost
jq '.predictions[0].memory = .predictions[0].memory_gib | del(.predictions[0].memory_gib)' "$TMP/predict.json" >"$TMP/bad1.json"
jq '.best[0].strategy = .best[0].strategy.spec' "$TMP/search.json" >"$TMP/bad2.json"
jq '.weights_gb = .memory_gib.weights' "$TMP/serve.json" >"$TMP/bad3.json"
jq 'del(.perfmod)' "$TMP/kernel.json" >"$TMP/bad4.json"
n=0
for b in 1 2 3 4; do valid "$TMP/bad$b.json" >/dev/null 2>&1 || n=$((n + 1)); done
# (the answers they were made from validate: the refusal is the change's)
ok $([ "$n" -eq 4 ] && valid "$TMP/predict.json" && valid "$TMP/search.json" && valid "$TMP/serve.json" &&
     valid "$TMP/kernel.json"; echo $?) \
  "the schema refuses memory for memory_gib, a strategy string, weights_gb, no envelope ($n of 4)"
finish
