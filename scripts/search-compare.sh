#!/bin/sh
# search-compare.sh: perfmod search's answers of two builds compared byte for byte (JSON less its seconds, and CSV), over dense, MoE, mixed-layer, --fix/--max-tp and cost searches on 1 and 2 threads: a speed-up must not change a result.
# Usage: scripts/search-compare.sh OLD-PERFMOD NEW-PERFMOD   (each a ./run of its build tree)
# Exit 0 when every search gives the same bytes; 1 with the differing searches named.
set -u
OLD=${1:?usage: search-compare.sh OLD-PERFMOD NEW-PERFMOD}
NEW=${2:?usage: search-compare.sh OLD-PERFMOD NEW-PERFMOD}
export OPENBLAS_NUM_THREADS=1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/search-compare.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0 n=0

# one search, both builds, both formats; $1 names it, the rest are its arguments
compare () {
  name=$1
  shift
  for fmt in json csv; do
    for b in old new; do
      pm=$OLD
      [ $b = new ] && pm=$NEW
      "$pm" search "$@" --format $fmt > "$TMP/$b.$fmt" 2> "$TMP/$b.err"
      echo "exit $?" >> "$TMP/$b.$fmt"
      if [ $fmt = json ] && jq -e . "$TMP/$b.$fmt" > /dev/null 2>&1; then
        jq 'del(.seconds)' "$TMP/$b.$fmt" > "$TMP/$b.j" 2>/dev/null && mv "$TMP/$b.j" "$TMP/$b.$fmt"
      fi
      [ $fmt = json ] && sed -i '/"seconds":/d' "$TMP/$b.$fmt"
    done
    n=$((n + 1))
    if cmp -s "$TMP/old.$fmt" "$TMP/new.$fmt" && cmp -s "$TMP/old.err" "$TMP/new.err"; then
      echo "same: $name ($fmt)"
    else
      echo "DIFFERENT: $name ($fmt)"
      diff "$TMP/old.$fmt" "$TMP/new.$fmt" | head -n 10
      diff "$TMP/old.err" "$TMP/new.err" | head -n 4
      fail=1
    fi
  done
}

G="--model gpt3-175b --gpu a100 --gpus 1024 --global-batch 1536 --seq 2048"
for j in 1 2; do
  compare "gpt3-175b 1024 A100 roofline top 50 jobs $j" $G --predictor roofline --top 50 --jobs $j
done
compare "gpt3-175b 1024 A100 tile-mlp top 50 jobs 2" $G --predictor tile-mlp --top 50 --jobs 2
compare "gpt3-175b 1024 A100 roofline top 1000, cost" $G --top 1000 --tokens 3e11 \
  --price-per-gpu-hour 2 --objective cost --jobs 2
compare "gpt3-175b 512 H100 fp8, max-cp 2" --model gpt3-175b --gpu h100 --gpus 512 \
  --global-batch 1024 --seq 4096 --precision fp8 --max-cp 2 --top 30 --jobs 2
for j in 1 2; do
  compare "mixtral-8x7b 256 H100 jobs $j" --model mixtral-8x7b --gpu h100 --gpus 256 \
    --global-batch 1024 --seq 4096 --top 50 --jobs $j
done
compare "qwen3-30b-a3b 128 H100 (128 experts)" --model qwen3-30b-a3b --gpu h100 --gpus 128 \
  --global-batch 512 --seq 4096 --top 50 --jobs 2
compare "deepseek-v2-lite 64 H100 (dense first layer, MLA)" --model deepseek-v2-lite --gpu h100 \
  --gpus 64 --global-batch 256 --seq 4096 --top 50 --jobs 2
compare "gemma2-9b 64 A100 (sliding layers)" --model gemma2-9b --gpu a100 --gpus 64 \
  --global-batch 256 --seq 4096 --top 50 --jobs 2
for j in 1 2; do
  compare "llama3-8b 64 H100 --fix zero=1 --max-tp 4 jobs $j" --model llama3-8b --gpu h100 \
    --gpus 64 --global-batch 256 --seq 4096 --max-tp 4 --fix zero=1 --top 20 --jobs $j
done
compare "gpt3-2.7b 16 H100 tile-mlp --fix pp=2,mbs=2" --model gpt3-2.7b --gpu h100 --gpus 16 \
  --global-batch 64 --seq 2048 --predictor tile-mlp --fix pp=2,mbs=2 --top 20 --jobs 2
compare "gpt3-175b 8 H100: all out of memory" --model gpt3-175b --gpu h100 --gpus 8 \
  --global-batch 8 --seq 2048 --jobs 2
compare "impossible --fix" --model llama3-8b --gpus 64 --global-batch 256 --fix tp=3 --jobs 2
echo "$n comparisons: $([ $fail = 0 ] && echo 'all the same' || echo 'some DIFFERENT')"
exit $fail
