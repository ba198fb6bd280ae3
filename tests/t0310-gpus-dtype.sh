#!/bin/sh
# t0310-gpus-dtype.sh: gpus.d per-dtype peaks (dense), fp4, fp32 matrix cores, TDP and base
# clock; every device spelling of the measured data resolves; a100 is the SXM 80 GB part.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

# section|spelling: every spelling must resolve to exactly that section.
SPELLINGS='a100-sxm-80gb|a100
a100-sxm-80gb|A100
a100-sxm-80gb|a100_sxm
a100-sxm-80gb|NVIDIA A100-SXM4-80GB
a100-sxm-80gb|a100-sxm4-80gb
NVIDIA_A100-SXM4-40GB|a100-sxm4-40gb
NVIDIA_A100-SXM4-40GB|NVIDIA A100-SXM4-40GB
NVIDIA_A100-PCIE-40GB|a100-40gb
NVIDIA_A100-PCIE-40GB|NVIDIA A100-PCIE-40GB
NVIDIA_H100_80GB_HBM3|h100
NVIDIA_H100_80GB_HBM3|NVIDIA H100 80GB HBM3
NVIDIA_H100_80GB_HBM3|NVIDIA H100
h100-sxm|h100_sxm
h100-pcie|h100-pcie
h100-pcie|h100_pcie
h100-pcie|NVIDIA H100 PCIe
h200-sxm|h200
h200-sxm|h200_sxm
h200-sxm|NVIDIA H200
b200-sxm|b200
b200-sxm|b200_sxm
b200-sxm|NVIDIA B200
gb200|gb200
gb200|gb200-nvl72
gb200|NVIDIA GB200
b300-sxm|b300
b300-sxm|b300_sxm
b300-sxm|NVIDIA B300
a40|a40
a40|NVIDIA A40
l40s|l40s
l40s|NVIDIA L40S
rtx-pro-6000-server|rtx_pro_6000_server
rtx-pro-6000-server|rtx-pro-6000
rtx-pro-6000-server|NVIDIA RTX PRO 6000 Blackwell Server Edition
mi100|AMD Instinct MI100
mi210|MI210
mi210|AMD Instinct MI210
mi250-gcd|AMD Instinct MI250
mi250x-gcd|mi250x
mi250x-gcd|AMD Instinct MI250X
mi300x|gfx942/304
mi300x|AMD Instinct MI300X
mi308x|gfx942/80
mi308x|AMD Instinct MI308X
mi325x|mi325x
mi325x|AMD Instinct MI325X
mi355x|mi355x
mi355x|AMD Instinct MI355X'
nspell=$(printf '%s\n' "$SPELLINGS" | wc -l)

# The aiconfigurator spec sheets and the sections they describe.
SHEETS='a100_sxm a100-sxm-80gb
a100_pcie NVIDIA_A100_80GB_PCIe
h100_sxm h100-sxm
h100_pcie h100-pcie
h200_sxm h200-sxm
b200_sxm b200-sxm
b300_sxm b300-sxm
gb200 gb200
l4 NVIDIA_L4
l40s l40s
rtx_pro_6000_server rtx-pro-6000-server'

plan $((nspell + 15))
ok_empty () {  # ok_empty FILE DESCRIPTION: passes when FILE (the problems found) is empty,
  # and perfmod gpus listed GPUs to look at
  if [ -s "$1" ] || [ "$(grep -c . "$TMP/gpus" 2>/dev/null)" -lt 20 ]; then ok 1 "$2"; diag "$(cat "$1")"
  else ok 0 "$2"; fi
}

# perfmod gpus: columns 1-16 are name vendor SMs fp32_gflops tf32 bf16 fp8 mem_gb mem_gbps
# l2_mb fp16 fp4 f32mx tdp_w base/boost link/nic, then the aliases.
"$PERFMOD" gpus > "$TMP/gpus" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 0 ] && [ "$(awk 'NR == 1 { print $12, $13, $14, $15 }' "$TMP/gpus")" = "fp4_tf f32mx_tf tdp_w base/mhz" ] &&
     echo 0 || echo 1) "perfmod gpus lists fp4, fp32 matrix, TDP and base/boost clock"

while IFS='|' read -r want spelling; do
  "$PERFMOD" --gpu "$spelling" --format json > "$TMP/out" 2>"$TMP/err" </dev/null
  got=$(jq -r .gpu "$TMP/out" 2>/dev/null)
  ok $([ "$got" = "$want" ] && echo 0 || echo 1) "'$spelling' is [$want]"
  [ "$got" = "$want" ] || diag "got '$got'" "$(cat "$TMP/err")"
done <<EOF
$SPELLINGS
EOF

# a100 is the SXM 80 GB part, and the output says which section an alias resolved to.
run_pm --gpu a100 --model gpt2-large
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -q ' on a100-sxm-80gb ' &&
     grep -q '^assumed: .*--gpu a100 = a100-sxm-80gb' "$TMP/out" && echo 0 || echo 1) \
  "--gpu a100 runs on a100-sxm-80gb and the assumed: line says so"
run_pm --gpu NVIDIA_A100-PCIE-40GB --model gpt2-large
ok $([ $rc -eq 0 ] && head -1 "$TMP/out" | grep -q ' on NVIDIA_A100-PCIE-40GB ' &&
     ! grep -q -- '--gpu' "$TMP/out" && echo 0 || echo 1) \
  "a section named by its own name is not reported as an alias"
ok $(awk '$1 == "a100-sxm-80gb" { f = ($8 == 80 && $9 == 2039 && $14 == 400) } END { exit !f }' "$TMP/gpus"; echo $?) \
  "a100-sxm-80gb: 80 GB, 2039 GB/s, 400 W"

# Shipped values of the new keys, as the listing shows them.
ok $(awk '$1 == "mi300x" { a = ($13 == 163.4 && $14 == 750 && $12 == 0) }
          $1 == "b200-sxm" { b = ($12 == 9000 && $14 == 1000) }
          $1 == "h100-sxm" { c = ($14 == 700 && $15 == "1590/1980") }
          $1 == "mi250x-gcd" { d = ($3 == 110 && $8 == 64 && $13 == 47.9) }
          END { exit !(a && b && c && d) }' "$TMP/gpus"; echo $?) \
  "fp4, fp32 matrix, TDP, base clock and the one-die MI250X as gpus.d says"

# Every Ampere-or-later tensor-core GPU has a bf16 peak (NVIDIA also tf32); only the
# pre-Ampere NVIDIA parts may lack it.
awk 'NR > 1 && $1 !~ /^Tesla_(V100|T4|P100|P4)/ && ($6 <= 0 || ($2 == "nvidia" && $5 <= 0)) {
       print "no bf16/tf32 peak: " $1 }' "$TMP/gpus" > "$TMP/bad"
ok_empty "$TMP/bad" "every Ampere-or-later section has a bf16 peak"

# Dense, not sparse: the ratios between dtypes that every chip here keeps.
awk 'NR > 1 {
       fp32 = $4 / 1000; tf32 = $5; bf16 = $6; fp8 = $7; fp16 = $11; fp4 = $12; mx = $13
       split($15, clk, "/")
       if (bf16 > 0 && fp16 > 0 && bf16 > 1.01 * fp16) print $1 ": bf16 above fp16"
       if (tf32 > 0 && bf16 > 0 && tf32 > 0.515 * bf16) print $1 ": tf32 above half of bf16"
       if (fp8 > 0 && bf16 > 0 && fp8 > 2.06 * bf16) print $1 ": fp8 above twice bf16"
       if (fp4 > 0 && (fp8 <= 0 || fp4 > 4.12 * fp8)) print $1 ": fp4 above four times fp8"
       if (mx > 0 && (mx < fp32 || mx > 2.06 * fp32)) print $1 ": fp32 matrix not 1-2x the vector peak"
       if (bf16 > 0 && bf16 * 1e12 / ($3 * clk[2] * 1e6) > 8192 * 1.03)
         print $1 ": bf16 above 8192 FLOP per SM per clock (a sparse figure?)"
       if (tf32 > 0 && tf32 < fp32) print $1 ": tf32 below the fp32 vector peak"
     }' "$TMP/gpus" > "$TMP/ratios"
ok_empty "$TMP/ratios" \
  "dense peaks: bf16 <= fp16, tf32 <= bf16/2, fp8 <= 2 bf16, fp4 <= 4 fp8, fp32 matrix 1-2x vector"

awk 'NR > 1 && $1 != "mi308x" && ($14 <= 0 || $16 ~ /^0\/|\/0$/) { print $1 }' "$TMP/gpus" > "$TMP/bad"
ok_empty "$TMP/bad" "every section but the MI308X estimate has a TDP, a link and a NIC"

# A private data dir for the parser.
mkdir -p "$TMP/d/gpus.d"
cp "$top_srcdir"/gpus.d/*.ini "$TMP/d/gpus.d/"
printf '[mi300x]\nfp4_tflops = 1234.5\nsource.fp4_tflops = test\nbase_clock_mhz = 1000\nsource.base_clock_mhz = test\ntdp_w = 777\nsource.tdp_w = test\nfp32_matrix_tflops = 99\nsource.fp32_matrix_tflops = test\n' \
  > "$TMP/d/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/d" "$PERFMOD" gpus > "$TMP/out" 2>"$TMP/err"
ok $(awk '$1 == "mi300x" { f = ($12 == 1234.5 || $12 == 1234 || $12 == 1235) && $13 == 99 && $14 == 777 && $15 == "1000/2100" && $3 == 304 }
          END { exit !f }' "$TMP/out"; echo $?) "the new keys parse and override key by key"

bad_gpu () {  # bad_gpu PATTERN DESCRIPTION CONTENT
  printf "$3" > "$TMP/d/gpus.d/99-local.ini"
  PERFMOD_DATADIR="$TMP/d" "$PERFMOD" gpus > "$TMP/out" 2>"$TMP/err"
  rc=$?
  if [ $rc -eq 2 ] && grep -Eq -- "$1" "$TMP/err" && [ ! -s "$TMP/out" ]; then ok 0 "$2"; else ok 1 "$2"; diag "rc=$rc" "$(cat "$TMP/err")"; fi
}
bad_gpu '99-local.ini:3: fp4_tflops: .-1. is not a non-negative number' "a negative fp4_tflops cites file:line" \
  '[mi300x]\nsource.fp4_tflops = s\nfp4_tflops = -1\n'
bad_gpu '99-local.ini:2: tdp_w: .7x. is not a positive number' "a bad tdp_w cites file:line" \
  '[mi300x]\ntdp_w = 7x\nsource.tdp_w = s\n'
bad_gpu "99-local.ini:1: \\[x\\]: base_clock_mhz 2000 is above the boost clock" "a base clock above the boost clock is refused" \
  '[x]\nsource = s\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\nmem_bw_gbps = 1\nclock_mhz = 1500\nbase_clock_mhz = 2000\n'
bad_gpu '99-local.ini:1: \[x\]: fp32_matrix_tflops has no source' "a new key without a source is refused" \
  '[x]\nsource.sms = a\nsource.fp32_gflops = a\nsource.mem_gb = a\nsource.mem_bw_gbps = a\nsms = 1\nfp32_gflops = 1\nmem_gb = 1\nmem_bw_gbps = 1\nfp32_matrix_tflops = 2\n'

# Against the aiconfigurator spec sheets, an independent source: the dense bf16, fp8 and
# fp4 peaks within 1 %, bandwidth within 3 %, TDP equal.
MODERN=${PERFMOD_MODERNDATA:-$top_srcdir/../shared/moderndata}
if [ -d "$MODERN/aiconfigurator" ]; then
  : > "$TMP/sheets"
  printf '%s\n' "$SHEETS" | while read -r sheet sec; do
    y="$MODERN/aiconfigurator/$sheet.yaml"
    [ -f "$y" ] || { echo "$sheet: no $y"; continue; }
    awk -v sec="$sec" -v sheet="$sheet" '
      FNR == NR { if ($1 ~ /^(bfloat16|fp8|fp4)_tc_flops:$|^mem_bw:$|^power:$/) { k = $1; sub(/:$/, "", k); y[k] = $2 }; next }
      $1 == sec {
        found = 1
        if (!near(y["bfloat16_tc_flops"] / 1e12, $6, 0.01)) print sheet ": bf16 " $6 " vs " y["bfloat16_tc_flops"] / 1e12
        if (("fp8_tc_flops" in y) && !near(y["fp8_tc_flops"] / 1e12, $7, 0.01)) print sheet ": fp8 " $7 " vs " y["fp8_tc_flops"] / 1e12
        if (("fp4_tc_flops" in y) && !near(y["fp4_tc_flops"] / 1e12, $12, 0.01)) print sheet ": fp4 " $12 " vs " y["fp4_tc_flops"] / 1e12
        if (!near(y["mem_bw"] / 1e9, $9, 0.03)) print sheet ": bandwidth " $9 " vs " y["mem_bw"] / 1e9
        if ($14 != y["power"]) print sheet ": TDP " $14 " vs " y["power"]
      }
      function near(a, b, tol) { return b > 0 && (a - b) / b <= tol && (b - a) / b <= tol }
      END { if (!found) print sheet ": no section " sec }' "$y" "$TMP/gpus"
  done > "$TMP/sheets"
  ok_empty "$TMP/sheets" \
    "bf16, fp8, fp4, bandwidth and TDP agree with aiconfigurator's spec sheets"
else
  ok 0 "# SKIP aiconfigurator spec sheets not found at $MODERN (set PERFMOD_MODERNDATA)"
fi

# every device string of the shared tables is a gpus.d section or alias (the first rows of
# each table: a table is one device), but gfx1250/96, a chip without public figures; and
# B300's, GB300's and MI355X's as public tables spell them
if [ -d "$MODERN" ]; then
  find "$MODERN" -name '*.csv' -o -name '*.csv.gz' | sort | while read -r f; do
    case $f in *.gz) gzip -dc "$f" ;; *) cat "$f" ;; esac 2>/dev/null | head -500 |
      awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "device") d = i; if ($i == "gfx") g = i; if ($i == "cu_num") c = i }; next }
               d { print $d } g && c { print $g "/" $c }'
  done >"$TMP/found"
  # and the spellings of public tables beyond the shared ones
  printf '%s\n' 'NVIDIA B300 SXM6 AC' 'NVIDIA GB300' 'gfx950/256' | cat "$TMP/found" - | sort -u >"$TMP/devices"
  unknown=
  while read -r dev; do
    [ "$dev" = gfx1250/96 ] && continue
    "$PERFMOD" kernel --op gemm --m 64 --n 64 --k 64 --gpu "$dev" --predictor roofline --format csv 2>/dev/null |
      grep -q '^roofline,gemm,' || unknown="$unknown '$dev'"
  done <"$TMP/devices"
  ok $([ "$(grep -c . "$TMP/devices")" -ge 8 ] && [ -z "$unknown" ]; echo $?) \
    "every device of the shared tables ($(grep -c . "$TMP/devices")) resolves to a gpus.d section${unknown:+; not:$unknown}"
else
  ok 0 "# SKIP moderndata not found at $MODERN (set PERFMOD_MODERNDATA)"
fi
finish
