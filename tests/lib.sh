# lib.sh: helpers for perfmod's shell tests: TAP output and running perfmod from the build tree.
# Each test sources it; automake's environment gives top_srcdir and top_builddir.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
PERFMOD="$top_builddir/perfmod"
: "${PERFMOD_PLUGIN_DIR:=$top_builddir/plugins/.libs}"
: "${PERFMOD_DATADIR:=$top_srcdir}"
export PERFMOD_PLUGIN_DIR PERFMOD_DATADIR
TMP=$(mktemp -d "${TMPDIR:-/tmp}/perfmod-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
tap_n=0
tap_failed=0

plan () { echo "1..$1"; }
skip_all () { echo "1..0 # SKIP $1"; exit 0; }
diag () { printf '%s\n' "$@" | sed 's/^/# /'; }

ok () {  # ok COND-STATUS DESCRIPTION
  tap_n=$((tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}

# run_pm: run perfmod, capturing stdout, stderr and status in $TMP/out, $TMP/err, $rc.
run_pm () {
  "$PERFMOD" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

# expect_fail STATUS PATTERN DESCRIPTION -- ARGS: perfmod exits STATUS, stderr matches
# PATTERN (grep -E), and nothing was written to stdout.
expect_fail () {
  want=$1 pat=$2 what=$3
  shift 4
  run_pm "$@"
  if [ "$rc" -eq "$want" ] && grep -Eq -- "$pat" "$TMP/err" && [ ! -s "$TMP/out" ]; then
    ok 0 "$what"
  else
    ok 1 "$what"
    diag "exit $rc (want $want); stderr:" "$(cat "$TMP/err")" "stdout:" "$(head -5 "$TMP/out")"
  fi
}

# expect_one_line STATUS PATTERN DESCRIPTION -- ARGS: as expect_fail, and stderr is one line
# (the exit-code contract: every non-zero exit says why in one line).
expect_one_line () {
  want=$1 pat=$2 what=$3
  shift 4
  run_pm "$@"
  if [ "$rc" -eq "$want" ] && grep -Eq -- "$pat" "$TMP/err" && [ ! -s "$TMP/out" ] &&
     [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
    ok 0 "$what"
  else
    ok 1 "$what"
    diag "exit $rc (want $want); stderr:" "$(head -5 "$TMP/err")" "stdout:" "$(head -3 "$TMP/out")"
  fi
}

# neusight: the NeuSight artifact folder, or skip.
neusight_or_skip () {
  NEUSIGHT=${PERFMOD_NEUSIGHT:-$top_srcdir/../shared/neusight}
  [ -f "$NEUSIGHT/summary/summary.csv" ] || skip_all "NeuSight data not found at $NEUSIGHT (set PERFMOD_NEUSIGHT)"
}

# san_env: for a program not built with the sanitizers (python3, an example built with
# plain cc) that loads a sanitized libperfmod: ASan's runtime preloaded, as ASan requires,
# and no leak report for the program's own allocations.  Prints env assignments.
san_env () {
  if grep -q -- '-fsanitize=address' "$top_builddir/Makefile" 2>/dev/null; then
    echo "LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0"
  fi
}

# jq 1.6's -e exits 0 on empty input: here an empty input (a file, or standard input when
# no file is named) is a failure, exit 5, so a check cannot pass on a perfmod that printed
# nothing.  (-n reads no input: as it is.)
jq () {
  _jq_last=
  for _jq_a; do
    case $_jq_a in -n|--null-input) command jq "$@"; return;; esac
    _jq_last=$_jq_a
  done
  if [ -n "$_jq_last" ] && [ -f "$_jq_last" ]; then
    [ -s "$_jq_last" ] || return 5
    command jq "$@"
  else
    cat >"$TMP/.jq-in"
    [ -s "$TMP/.jq-in" ] || return 5
    command jq "$@" <"$TMP/.jq-in"
  fi
}

finish () { exit $((tap_failed > 0)); }

# cmpf A OP B: awk's numeric comparison (<, <=, >, ==) of two values that must be numbers
cmpf () { awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
  if (a !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ || b !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) exit 1
  if (op == "<") exit !(a < b); if (op == ">") exit !(a > b); if (op == "==") exit !(a == b)
  if (op == "<=") exit !(a <= b)
  exit 1 }'; }

# gpu_key SECTION KEY: the key's value in that section of gpus.d (a later file's wins)
gpu_key () {
  cat "$top_srcdir"/gpus.d/*.ini |
    awk -v s="[$1]" -v k="$2" '/^\[/ { in_s = ($0 == s) } in_s && $1 == k && $2 == "=" { v = $3 } END { print v }'
}

# serve_to FORMAT OUT ERR ARGS...: perfmod serve ARGS in FORMAT into OUT, stderr into ERR,
# its status in $rc (said when not 0)
serve_to () {
  _f=$1 _o=$2 _e=$3
  shift 3
  "$PERFMOD" serve --format "$_f" "$@" >"$_o" 2>"$_e"
  rc=$?
  [ "$rc" -eq 0 ] || diag "exit $rc: serve $*" "$(cat "$_e")"
}
