#!/bin/sh
# test-guard.sh: the shell tests run against a perfmod that prints nothing and one that prints garbage (both exit 0); every assertion on perfmod's output must then fail.  The ones that may pass say that something is absent (no file left behind) or are skips.  Prints the assertions that passed and should not have; exits 1 if any did.
# Usage: sh scripts/test-guard.sh (from the built tree; make check-guard)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${PERFMOD_NEUSIGHT:=$top/../shared/neusight}"
: "${PERFMOD_MODERNDATA:=$top/../shared/moderndata}"
export PERFMOD_NEUSIGHT PERFMOD_MODERNDATA
export PERFMOD_PLUGIN_DIR="$top/plugins/.libs" PERFMOD_DATADIR="$top"
work=$(mktemp -d "${TMPDIR:-/tmp}/perfmod-guard.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/nothing" "$work/garbage"
printf '#!/bin/sh\nexit 0\n' >"$work/nothing/perfmod"
printf '#!/bin/sh\necho "perfmod 9 garbage, 1,2,3"\necho "roofline,x,y" >&2\nexit 0\n' >"$work/garbage/perfmod"
chmod +x "$work/nothing/perfmod" "$work/garbage/perfmod"
# descriptions that hold without perfmod's output: absences, and skips
allowed='leaves no|no file aside|no parameter file|no chart and no temporary file|formats without a troff warning|# SKIP'
bad=0 n=0
for kind in nothing garbage; do
  for t in "$top"/tests/t[0-9]*.sh; do
    top_srcdir=$top top_builddir=$work/$kind timeout 300 sh "$t" </dev/null 2>/dev/null |
      grep '^ok ' | grep -Ev -- "$allowed" | sed "s|^|$kind $(basename "$t"): |" >>"$work/passed"
    n=$((n + 1))
  done
done
if [ -s "$work/passed" ]; then
  cat "$work/passed"
  bad=$(wc -l <"$work/passed")
fi
echo "test-guard: $n runs of the shell tests against a perfmod that prints nothing or garbage;" \
  "$bad assertions passed that should have failed"
[ "$bad" -eq 0 ]
