#!/bin/sh
# t1000-hostile.sh: hostile and careless input to the readers (issue 23): large traces, byte order marks, long INI lines, bad gpus.d, strategies.d and parameter files, directories, interrupted training.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 38


# A data directory of our own: gpus.d, strategies.d and tiles.d copied, FILE added.
datadir () {
  rm -rf "$TMP/d"
  mkdir -p "$TMP/d"
  cp -r "$top_srcdir/gpus.d" "$top_srcdir/strategies.d" "$top_srcdir/tiles.d" "$top_srcdir/models" "$TMP/d/"
}

# --- Scale: 200,000 nodes, each kernel with a name of its own (a linear
# name pool took minutes); the timing is scripts/bench-readers.sh's.
N=200000
awk -v n=$N 'BEGIN {
  print "Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape"
  print "input_ids,misc,[],[],[],set(),set(),[],\"(8, 512)\""
  for (i = 1; i < n; i++)
    printf "n%d,VECop%d,\"[[\047VECop%d\047, [%d, 1024]]]\",[],[],set(),set(),\"[(8, 1024)]\",\"(8, 1024)\"\n", i, i, i, i % 7 + 1
}' >"$TMP/big.csv"
run_pm graph --opgraph "$TMP/big.csv" --format csv
ok $([ $rc -eq 0 ] && awk -F, -v n=$N 'NR > 1 { rows++; if ($7 != "op" substr($1, 2)) bad++; b += $8 }
       END { exit !(rows == n - 1 && !bad && b == 4 * (n - 1) - 3) }' "$TMP/out" && echo 0 || echo 1) \
  "a traced graph of 200,000 nodes loads: every node, its own kernel name, its batch"
mkdir -p "$TMP/k"
awk 'BEGIN { print "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K"
  for (i = 1; i <= 100000; i++)
    printf "linear,0.5,Tesla T4,ampere_sgemm_128x64_tn_%d,1,1,1,1,%d,128,64\n", i, 64 + i % 1000 }' >"$TMP/k/linear.csv"
run_pm eval --data "$TMP/k" --predictor roofline --format csv --neusight "$TMP/none"
ok $([ $rc -eq 0 ] && grep -q '^roofline,FC,in,100000,' "$TMP/out" && echo 0 || echo 1) \
  "a kernel table of 100,000 rows, each kernel named apart, is evaluated whole"

# --- A UTF-8 byte order mark (spreadsheets write one) is not part of a column name.
printf '\357\273\277' >"$TMP/bom.csv"
cat >>"$TMP/bom.csv" <<'EOF'
Name,OpName,FwOps,BwOps,AccOps,Prev,Next,InputShapes,OutputShape
lin,Linear,"[['Linear', (64, 256, 512)]]",[],[],set(),set(),"[(64, 256)]","(64, 512)"
EOF
run_pm --opgraph "$TMP/bom.csv" --gpu a100 --format csv
ok $([ $rc -eq 0 ] && grep -q '^tile-mlp,[0-9]' "$TMP/out" && echo 0 || echo 1) "an op graph with a byte order mark loads"
mkdir -p "$TMP/kb"
{ printf '\357\273\277'; head -3 "$TMP/k/linear.csv"; } >"$TMP/kb/linear.csv"
run_pm eval --data "$TMP/kb" --predictor roofline --format csv --neusight "$TMP/none"
ok $([ $rc -eq 0 ] && grep -q '^roofline,FC,in,2,' "$TMP/out" && echo 0 || echo 1) \
  "a kernel table with a byte order mark is read, not refused for a missing OPName column"

# --- INI lines longer than inih's buffer (Debian: 199 characters) are
# refused with file:line, in each configuration directory.
long=$(awk 'BEGIN { while (n++ < 300) printf "x" }')
datadir
printf '[h100-sxm]\nnote = %s' "$long" >"$TMP/d/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/d" expect_one_line 2 "gpus.d/99-local.ini:2: line longer than 199 characters" \
  "gpus.d: a 300-character note at the end of the file is refused with file:line" -- gpus
# the tail of a cut line would have been read as a key of its own
printf '[h100-sxm]\nnote = %.192smem_gb = 1\n' "$long" >"$TMP/d/gpus.d/99-local.ini"
PERFMOD_DATADIR="$TMP/d" expect_one_line 2 "gpus.d/99-local.ini:2: line longer than" \
  "gpus.d: a long line whose tail reads 'mem_gb = 1' is refused, not misread" -- gpus
datadir
printf '[mine]\ntp = 2\ndescription = %s\n' "$long" >"$TMP/d/strategies.d/20-local.ini"
PERFMOD_DATADIR="$TMP/d" expect_one_line 2 "strategies.d/20-local.ini:3: line longer than" \
  "strategies.d: a long line is refused with file:line" -- strategies
datadir
printf '[mine]\nclasses = linear\npattern = %s\n' "$long" >"$TMP/d/tiles.d/20-local.ini"
PERFMOD_DATADIR="$TMP/d" expect_one_line 2 "tiles.d/20-local.ini:3: line longer than" \
  "tiles.d: a long line is refused with file:line" -- eval --data "$TMP/kb"

# --- gpus.d: capacities must be positive, every number finite.
bad_gpu () {  # bad_gpu KEY VALUE
  datadir
  printf '[h100-sxm]\n%s = %s\n' "$1" "$2" >"$TMP/d/gpus.d/99-local.ini"
  PERFMOD_DATADIR="$TMP/d" expect_one_line 2 "99-local.ini:2: $1: '$(echo "$2" | sed 's/+/[+]/')' is not" \
    "gpus.d: $1 = $2 is refused at load with file:line" -- gpus
}
bad_gpu sms 0
bad_gpu mem_bw_gbps 0
bad_gpu mem_gb -80
bad_gpu fp32_gflops inf
bad_gpu l2_mb NaN
bad_gpu bf16_tflops +Inf
bad_gpu link_latency_us -1
bad_gpu nvls 2
bad_gpu nvlink yes

# --- strategies.d: a preset defined again in a later file.
datadir
printf '; local presets\n[tp8]\ntp = 4\n' >"$TMP/d/strategies.d/20-local.ini"
PERFMOD_DATADIR="$TMP/d" expect_one_line 2 "20-local.ini:2: \[tp8\] is already defined at .*10-megatron.ini:[0-9]+" \
  "strategies.d: a preset redefined in a second file blames the second file:line and names the first" \
  -- strategies

# --- Parameter files: linreg's, written here: per class a fit (coef,
# intercept for Tesla_T4) and an extrapolation line, values 1, 0, inf or nan.
f64 () {
  for v; do
    case $v in
      1) printf '\000\000\000\000\000\000\360\077' ;;
      inf) printf '\000\000\000\000\000\000\360\177' ;;
      nan) printf '\000\000\000\000\000\000\370\177' ;;
      *) printf '\000\000\000\000\000\000\000\000' ;;
    esac
  done
}
lr () {  # lr FILE EXTRAPOLATE-SHAPE VALUE [HEADER-LINE]
  {
    printf 'perfmod-params 1\npredictor: linreg\ngpus: Tesla_T4\n%s' "${4:-}"
    for c in bmm linear elementwise softmax layernorm; do
      printf 'tensor %s.fit 1 2\ntensor %s.extrapolate %s\n' $c $c "$2"
    done
    printf 'data\n'
    for c in bmm linear elementwise softmax layernorm; do
      f64 "$3" "$3"
      [ "$2" = "1 2" ] && f64 "$3" "$3" || f64 "$3"
    done
  } >"$1"
}
LR="--model gpt2-large --gpu a100 --dtype fp32 --predictor linreg --plugin-opt linreg:tc_params=none"
lr "$TMP/lr.params" "1 2" 1
run_pm $LR --plugin-opt "linreg:params=$TMP/lr.params"
ok $([ "$rc" -eq 0 ] && grep -q 'linreg' "$TMP/out"; echo $?) \
  "a well-formed linreg file written by hand predicts (the cases below differ from it in one way)"
lr "$TMP/lr11.params" "1 1" 1
expect_one_line 2 "lr11.params: tensors '[a-z]+\.fit' \(1x2\) and '[a-z]+\.extrapolate' \(1x1\)" \
  "linreg: a 1x1 .extrapolate tensor is refused, not read past" -- $LR --plugin-opt "linreg:params=$TMP/lr11.params"
lr "$TMP/inf.params" "1 2" inf
expect_one_line 2 "inf.params:4: tensor 'bmm.fit': row 1, column 1 is inf" \
  "a file of +Inf values is refused with file:line, not predicted as 0 ms" -- $LR --plugin-opt "linreg:params=$TMP/inf.params"
lr "$TMP/nan.params" "1 2" 1 "scale: NaN
"
expect_one_line 2 "nan.params:4: scale: 'NaN' is not a finite number" \
  "a header value of NaN is refused with file:line" -- $LR --plugin-opt "linreg:params=$TMP/nan.params"
printf 'perfmod-params 1\npredictor: linreg\ntensor bmm.fit 16777216 16777216\ndata\n' >"$TMP/huge.params"
expect_one_line 2 "huge.params:3: tensor 'bmm.fit' is 16777216x16777216: the tensors would hold more than" \
  "a header claiming a 2^48-value tensor is refused, not allocated" -- $LR --plugin-opt "linreg:params=$TMP/huge.params"
printf 'perfmod-params 1\npredictor: linreg\ntensor bmm.fit 16384 16384\ndata\n' >"$TMP/big.params"
expect_one_line 2 "big.params:4: truncated or padded: the tensors declared hold 2147483648 bytes, the file has 0" \
  "a header claiming 2 GiB the file does not hold is refused before anything is allocated" -- \
  $LR --plugin-opt "linreg:params=$TMP/big.params"
expect_one_line 2 "$TMP: is a directory, not a parameter file" "a directory given as a parameter file is named" -- \
  $LR --plugin-opt "linreg:params=$TMP"
# tile-mlp's shipped file claiming one network more per class than it has
sed 's/^members: 5$/members: 6/' "$top_srcdir/params/tile-mlp.params" >"$TMP/few.params"
expect_one_line 2 "few.params: no 'bmm.6.layers' key" "tile-mlp: a file with fewer members than it claims is refused" -- \
  --model gpt2-large --gpu a100 --dtype fp32 --predictor tile-mlp --plugin-opt "tile-mlp:params=$TMP/few.params" \
  --plugin-opt tile-mlp:tc_params=none
# ... also where eval goes on after a kernel fails (each kernel set the networks up again, leaking them)
G="$TMP/md/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$G"
{ echo framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency
  echo "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,4096,4096,4096,1.0"
  echo "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,2048,4096,4096,0.5"; } | gzip >"$G/gemm_perf.csv.gz"
run_pm eval --data "$TMP/md" --predictor tile-mlp --plugin-opt "tile-mlp:params=$TMP/few.params" \
  --plugin-opt tile-mlp:tc_params=none --plugin-opt tile-mlp:gemm_params=none --format csv
ok $([ $rc -eq 2 ] && grep -q "few.params: no 'bmm.6.layers' key" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ] &&
     echo 0 || echo 1) "eval: the same file is refused once, exit 2 (and, under ASan, without a leak)"
[ $rc -eq 2 ] || diag "exit $rc" "$(cat "$TMP/err")"

# --- A directory where a file is expected, a path that is not there.
expect_one_line 2 "^perfmod: $TMP: is a directory, not a model config" "--model DIR is refused, naming it" -- --model "$TMP"
expect_one_line 2 "$TMP: cannot open the op graph: Is a directory" "--opgraph DIR is refused, naming it" -- --opgraph "$TMP"
expect_one_line 2 "/nonexistent: cannot read the kernel table: No such file" "eval --data /nonexistent says so" -- \
  eval --data /nonexistent
gen () {  # gen DIR: kernels on the five training GPUs, each class
  mkdir -p "$1"
  awk -v dir="$1" 'BEGIN {
    split("Tesla P4,Tesla P100-PCIE-16GB,Tesla V100-PCIE-32GB,Tesla T4,NVIDIA A100-PCIE-40GB", g, ",")
    mm = "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,M,N,K"
    vv = "OPName,Latency,Device,Kernel Name,Grid x,Grid y,Grid z,B,H"
    print mm > (dir "/bmm.csv"); print mm > (dir "/linear.csv")
    print vv > (dir "/elem.csv"); print vv > (dir "/ln.csv"); print vv > (dir "/softmax.csv")
    for (i = 1; i <= 5; i++)
      for (j = 1; j <= 20; j++) {
        printf "bmm,%g,%s,ampere_sgemm_128x64_nn,1,1,%d,%d,%d,128,%d\n", 0.01 * j * i, g[i], j, j, 64 * j, 32 + 8 * j > (dir "/bmm.csv")
        printf "linear,%g,%s,ampere_sgemm_64x64_tn,1,1,1,1,%d,128,%d\n", 0.01 * j * i, g[i], 64 * j, 32 + 8 * j > (dir "/linear.csv")
        printf "add,%g,%s,add_kernel,%d,1,1,%d,512\n", 0.01 * j * i, g[i], 100 * j, 1000 * j > (dir "/elem.csv")
        printf "ln,%g,%s,ln_kernel,%d,1,1,%d,512\n", 0.01 * j * i, g[i], 1000 * j, 1000 * j > (dir "/ln.csv")
        printf "softmax,%g,%s,softmax_kernel,%d,1,1,%d,512\n", 0.01 * j * i, g[i], 1000 * j, 1000 * j > (dir "/softmax.csv")
      }
  }'
}
gen "$TMP/train"
expect_one_line 2 "/nonexistent: cannot read the kernel table: No such file" "train --data /nonexistent says so" -- \
  train --predictor linreg --data /nonexistent --out "$TMP/x.params"
ok $([ ! -e "$TMP/x.params" ] && ! ls "$TMP"/x.params.tmp* >/dev/null 2>&1 && echo 0 || echo 1) \
  "... and leaves no file, whole or aside"

# --- train's output: checked before training, never left half-written.
expect_one_line 2 "$TMP/no/such/dir/x.params: cannot write: No such file" \
  "train --out in a missing directory is refused before training" -- \
  train --predictor tile-mlp --data "$TMP/train" --out "$TMP/no/such/dir/x.params" --epochs 100000
expect_one_line 2 "$TMP: is a directory, not a file to write" "train --out DIR is refused before training" -- \
  train --predictor linreg --data "$TMP/train" --out "$TMP"
# wait_aside FILE: until FILE.tmpPID is there (at most 10 s)
wait_aside () {
  i=0
  while [ $i -lt 100 ] && ! ls "$1".tmp* >/dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
  ls "$1".tmp* >/dev/null 2>&1
}
"$PERFMOD" train --predictor tile-mlp --data "$TMP/train" --out "$TMP/t.params" --epochs 100000 --members 1 \
  2>"$TMP/err" &
pid=$!
wait_aside "$TMP/t.params"
aside=$?
kill -TERM $pid
wait $pid
rc=$?
ok $([ $aside -eq 0 ] && [ $rc -eq 143 ] && [ ! -e "$TMP/t.params" ] && ! ls "$TMP"/t.params.tmp* >/dev/null 2>&1 &&
     echo 0 || echo 1) "train: its output is reserved aside at the start; SIGTERM removes it"
[ $aside -eq 0 ] && [ $rc -eq 143 ] || diag "aside $aside, exit $rc" "$(ls "$TMP")"
"$PERFMOD" train --predictor tile-mlp --data "$TMP/train" --out "$TMP/t.params" --epochs 100000 --members 1 \
  2>"$TMP/err" &
pid=$!
wait_aside "$TMP/t.params"
kill -KILL $pid
wait $pid
ok $(ls "$TMP"/t.params.tmp$pid >/dev/null 2>&1; echo $?) "train killed outright leaves its file aside"
run_pm train --predictor linreg --data "$TMP/train" --out "$TMP/t.params"
ok $([ $rc -eq 0 ] && [ -s "$TMP/t.params" ] && ! ls "$TMP"/t.params.tmp* >/dev/null 2>&1 && echo 0 || echo 1) \
  "the next write of the same file removes the file a dead process left aside"

# a table of 2,000 dtypes nobody models: one line, the first 8 names and "...", not all of them
Q="$TMP/q/aiconfigurator/h100_sxm/gemm/a/1"
mkdir -p "$Q"
awk 'BEGIN { print "framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency"
  for (i = 1; i <= 2000; i++) printf "A,1,NVIDIA H100 80GB HBM3,gemm,x,q%d,16,16,16,1\n", i
  print "A,1,NVIDIA H100 80GB HBM3,gemm,x,bfloat16,16,16,16,1" }' | gzip >"$Q/gemm_perf.csv.gz"
run_pm eval --data "$TMP/q" --predictor roofline
ok $([ "$rc" -eq 0 ] && [ "$(grep -c 'left out' "$TMP/err")" -eq 1 ] &&
     grep -q ": 2000 rows of dtypes perfmod does not model left out (q1, q2, q3, q4, q5, q6, q7, q8, ...)$" "$TMP/err"
     echo $?) "2,000 unknown dtypes: counted, the first 8 named, then ..."
finish
