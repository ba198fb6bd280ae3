#!/bin/sh
# coverage.sh: line and branch coverage of core/ (and, listed apart, plugins/) from the .gcda files a build configured with --enable-coverage left after its tests (make coverage); a branch counts when it was taken at least once.  Exits 1 when core/'s branch coverage is under COVERAGE_MIN percent (85).
# Usage: sh scripts/coverage.sh [BUILDDIR]   (default: the tree holding this script)
# Environment: COVERAGE_MIN (85), GCOV (gcov), COVERAGE_FILES=1 to list every file.
set -u
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
min=${COVERAGE_MIN:-85}
cd "$top" || exit 2
gcda=$(find core plugins -name '*.gcda' 2>/dev/null)
[ -n "$gcda" ] || { echo "coverage: no .gcda files under $top: configure --enable-coverage, then make check" >&2; exit 2; }
# gcov -n: the summaries only, no .gcov files.  A header's functions are counted in each
# object that includes it; a source file is counted once, in the object that ran most of it.
# shellcheck disable=SC2086
${GCOV:-gcov} -b -n $gcda 2>/dev/null | awk -v min="$min" -v all="${COVERAGE_FILES:-0}" '
  function num(s) { sub(/%.*/, "", s); return s + 0 }
  function count(s) { sub(/.* of /, "", s); return s + 0 }
  /^File / { f = $2; gsub(/\047/, "", f); next }
  /^(Calls executed|No calls)/ { f = ""; next }   # a file\047s block ends; totals are none\047s
  f == "" { next }
  /^Lines executed:/ { l = count($0); lk = int(num(substr($0, 16)) * l / 100 + 0.5)
                      if (!(f in ln) || lk > lt[f]) { ln[f] = l; lt[f] = lk } next }
  /^Taken at least once:/ { b = count($0); bk = int(num(substr($0, 21)) * b / 100 + 0.5)
                      if (!(f in bn) || bk > bt[f]) { bn[f] = b; bt[f] = bk } next }
  END {
    for (f in ln) {
      part = f ~ /^core\// ? "core" : f ~ /^plugins\// ? "plugins" : ""
      if (part == "" || f !~ /\.c$/) continue
      L[part] += ln[f]; LT[part] += lt[f]; B[part] += bn[f]; BT[part] += bt[f]
      if (all + 0)
        printf "  %-36s lines %6.2f %% of %5d   branches %6.2f %% of %5d\n", f,
               ln[f] ? 100 * lt[f] / ln[f] : 100, ln[f], bn[f] ? 100 * bt[f] / bn[f] : 100, bn[f]
    }
    for (p in L)
      printf "%-8s lines %6.2f %% of %d, branches %6.2f %% of %d\n", p "/", 100 * LT[p] / L[p], L[p],
             B[p] ? 100 * BT[p] / B[p] : 100, B[p]
    if (!("core" in B)) { print "coverage: no core/ sources were measured"; exit 2 }
    pc = 100 * BT["core"] / B["core"]
    if (pc < min) { printf "coverage: core/ branch coverage %.2f %% is under %s %%\n", pc, min; exit 1 }
  }'
