#!/bin/sh
# run-all.sh: README's test command: build, make check, make distcheck, and make check under
# AddressSanitizer + UndefinedBehaviorSanitizer; writes the TAP totals to tests/.counts.
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
: "${PERFMOD_NEUSIGHT:=$top/../shared/neusight}"
: "${PERFMOD_MODERNDATA:=$top/../shared/moderndata}"
export PERFMOD_NEUSIGHT PERFMOD_MODERNDATA
jobs=$(nproc 2>/dev/null || echo 2)
status=0
rm -f tests/.counts

# A skipped or expected-to-fail check is no pass: here every check runs (the data folders,
# python3, jq and Open MPI are installed), so a SKIP or XFAIL says something is missing.
count () {  # add the results of the .trs files under $1 to the totals
  find "$1" -name '*.trs' -exec cat {} + 2>/dev/null |
    awk '/^:test-result: PASS/ { p++ } /^:test-result: (FAIL|XPASS|ERROR|XFAIL|SKIP)/ { f++ }
         END { print p + 0, f + 0 }'
}
skipped () {  # the checks under $1 that were skipped or expected to fail, named
  grep -h '^:test-result: \(SKIP\|XFAIL\)' $(find "$1" -name '*.trs') 2>/dev/null | head -20
}

step () { echo "== $*"; "$@" || { echo "FAILED: $*"; status=1; return 1; }; }

step autoreconf -fi >/dev/null 2>&1 || exit 1
step ./configure --enable-werror -q || exit 1
step make -j"$jobs" >/dev/null || exit 1
step make -j"$jobs" check
set -- $(count tests); pass=$1 fail=$2
for f in tests/*.log; do grep -Eq '^(not ok|Bail out)' "$f" 2>/dev/null && { echo "--- $f"; cat "$f"; }; done
skipped tests | sed 's/^/counted as failed: /'

# The tests must fail on a perfmod that prints nothing or garbage: one result.
if step sh scripts/test-guard.sh >test-guard.log 2>&1; then pass=$((pass + 1))
else fail=$((fail + 1)); tail -20 test-guard.log; fi

# Sanitizers in a separate build tree of the distributed sources.
step make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror >distcheck.log 2>&1 ||
  tail -40 distcheck.log
dist=$(ls perfmod-*.tar.gz 2>/dev/null | head -1)
if [ -n "$dist" ]; then
  rm -rf _san && mkdir _san && tar -xzf "$dist" -C _san --strip-components=1
  (cd _san && step ./configure -q --enable-sanitizers --enable-werror && step make -j"$jobs" >/dev/null &&
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 step make -j"$jobs" check) || status=1
  set -- $(count _san/tests); pass=$((pass + $1)); fail=$((fail + $2))
  skipped _san/tests | sed 's/^/counted as failed (sanitizers): /'
  for f in _san/tests/*.log; do grep -Eq '^(not ok|Bail out)|runtime error|Sanitizer' "$f" 2>/dev/null && { echo "--- $f"; cat "$f"; }; done
else
  echo "no tarball: sanitizer run skipped"; fail=$((fail + 1))
fi
[ "$status" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1
echo "$pass $fail" > tests/.counts
echo "tests: $pass passed, $fail failed"
exit $status
