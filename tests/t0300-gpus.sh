#!/bin/sh
# t0300-gpus.sh: gpus.d: listing, aliases, NeuSight's exact numbers, overrides and errors with file:line.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 19

run_pm gpus
ok $([ $rc -eq 0 ] && grep -q '^h100-sxm ' "$TMP/out" && echo 0 || echo 1) "perfmod gpus"
for g in NVIDIA_H100_80GB_HBM3 NVIDIA_A100-PCIE-40GB NVIDIA_A100-SXM4-40GB NVIDIA_A100_80GB_PCIe NVIDIA_L4 \
         Tesla_V100-PCIE-32GB Tesla_T4 Tesla_P100-PCIE-16GB Tesla_P4 h100-sxm h200-sxm b200-sxm a100-sxm-80gb \
         mi100 mi210 mi250 mi300x; do
  grep -q "^$g " "$TMP/out" || { diag "missing $g"; missing=1; }
done
ok ${missing:-0} "every NeuSight GPU and every datasheet GPU is listed"

# NeuSight's own numbers, field by field, when the artifact is here.
NEUSIGHT=${PERFMOD_NEUSIGHT:-$top_srcdir/../shared/neusight}
if [ -d "$NEUSIGHT/device_configs" ]; then
  bad=0
  for f in "$NEUSIGHT"/device_configs/*.json; do
    case $f in *_TP.json) continue ;; esac   # NeuSight's altered tp device, deliberately not copied
    dev=$(jq -r .Device "$f")
    line=$(awk -v d="$(echo "$dev" | tr ' ' '_')" '$1 == d' "$TMP/out")
    set -- $line
    [ "$3" = "$(jq -r .Num_Sm "$f")" ] && [ "$4" = "$(jq -r .SingleFLOPs "$f")" ] &&
      [ "$8" = "$(jq -r .Dev_Mem "$f")" ] && [ "$9" = "$(jq -r .Mem_Bw "$f")" ] &&
      [ "${10}" = "$(jq -r .L2Cache "$f")" ] || { diag "mismatch for $dev: $line"; bad=1; }
  done
  ok $bad "SMs, FP32 peak, memory, bandwidth and L2 equal NeuSight's device files"
else
  ok 0 "# SKIP NeuSight device files not found"
fi

for a in "h100" "NVIDIA H100 80GB HBM3" "NVIDIA_H100_80GB_HBM3" "nvidia-h100-80gb-hbm3"; do
  run_pm --gpu "$a" --format json
  ok $([ $rc -eq 0 ] && jq -e '.gpu == "NVIDIA_H100_80GB_HBM3"' "$TMP/out" >/dev/null && echo 0 || echo 1) "alias '$a' means NVIDIA_H100_80GB_HBM3"
done
run_pm --gpu mi250 --format json
ok $([ $rc -eq 0 ] && jq -e '.gpu == "mi250"' "$TMP/out" >/dev/null && echo 0 || echo 1) "short name mi250"

# A private data dir: later files override earlier ones key by key.
mkdir -p "$TMP/d/gpus.d"
cp "$top_srcdir"/gpus.d/*.ini "$TMP/d/gpus.d/"
printf '[NVIDIA_H100_80GB_HBM3]\nmem_bw_gbps = 6860\nsource.mem_bw_gbps = test override\n' > "$TMP/d/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/d" "$PERFMOD" gpus > "$TMP/out" 2>"$TMP/err"
ok $(awk '$1 == "NVIDIA_H100_80GB_HBM3" { f = 1; exit !($9 == 6860 && $3 == 132) } END { if (!f) exit 1 }' "$TMP/out"; echo $?) \
  "a later file overrides one key and keeps the others"

bad_gpu () {  # bad_gpu PATTERN DESCRIPTION CONTENT
  rm -f "$TMP/d/gpus.d/99-local.ini"
  printf "$3" > "$TMP/d/gpus.d/99-local.ini"
  PERFMOD_DATADIR="$TMP/d" "$PERFMOD" gpus > "$TMP/out" 2>"$TMP/err"
  rc=$?
  if [ $rc -eq 2 ] && grep -Eq -- "$1" "$TMP/err" && [ ! -s "$TMP/out" ]; then ok 0 "$2"; else ok 1 "$2"; diag "rc=$rc" "$(cat "$TMP/err")"; fi
}
bad_gpu '99-local.ini:3: sms: .12x. is not a positive integer' "bad number cites file:line" \
  '[x]\nsource = s\nsms = 12x\n'
bad_gpu '99-local.ini:2: unknown key .frobs. in \[x\]' "unknown key cites file:line" '[x]\nfrobs = 1\n'
bad_gpu '99-local.ini:1: syntax error' "syntax error cites file:line" '[x\nsms = 1\n'
bad_gpu '99-local.ini:1: \[x\]: fp32_gflops has no source' "a number without a source is refused" \
  '[x]\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\nmem_bw_gbps = 1\nsource.sms = a\nsource.mem_gb = a\nsource.mem_bw_gbps = a\n'
bad_gpu "alias 'h100' also names" "an alias naming two GPUs is refused" \
  '[x]\naliases = h100\nsource = s\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\nmem_bw_gbps = 1\n'
bad_gpu "99-local.ini:1: \\[x\\]: missing mandatory key 'mem_bw_gbps'" "missing mandatory key named" \
  '[x]\nsource = s\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\n'
bad_gpu '99-local.ini:3: engine_ar2_oneshot_us: .-1. is not a positive number' \
  "a negative engine all-reduce latency cites file:line" '[x]\nsource = s\nengine_ar2_oneshot_us = -1\n'
bad_gpu '99-local.ini:4: engine_ar8_twoshot_gbps: .0. is not a positive number' \
  "a zero engine all-reduce bandwidth cites file:line" '[x]\nsource = s\nsms = 1\nengine_ar8_twoshot_gbps = 0\n'
bad_gpu '99-local.ini:1: \[x\]: engine_ar4_twoshot_bytes is missing' \
  "an engine all-reduce group size given in part is refused, naming the missing keys" \
  '[x]\nsource = s\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\nmem_bw_gbps = 1\nsource.engine_ar = fit\nengine_ar4_oneshot_us = 4\nengine_ar4_oneshot_gbps = 100\nengine_ar4_twoshot_us = 9\nengine_ar4_twoshot_gbps = 200\n'
rm -f "$TMP/d/gpus.d/99-local.ini"
printf '[x]\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\nmem_bw_gbps = 1\nsource = s\nsource.engine_ar = fit\nengine_ar4_oneshot_us = 4\nengine_ar4_oneshot_gbps = 100\nengine_ar4_twoshot_bytes = 1e6\nengine_ar4_twoshot_us = 9\nengine_ar4_twoshot_gbps = 200\n' > "$TMP/d/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/d" "$PERFMOD" gpus > "$TMP/out" 2>"$TMP/err"
ok $([ $? -eq 0 ] && grep -q '^x ' "$TMP/out" && echo 0 || echo 1) "all five keys of a group size with source.engine_ar are accepted"
finish
