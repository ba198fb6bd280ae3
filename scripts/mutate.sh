#!/bin/sh
# mutate.sh: mutation testing (make mutate): each mutant of scripts/mutants.txt applied to a scratch copy of the tree, rebuilt, and run against the test suite until a test fails (killed); prints the survivors and the kill rate, exits 1 under MUTATE_MIN percent (90).
# Usage: sh scripts/mutate.sh [ID ...]   (IDs: numbers of mutants in the list, 1 first; none: all)
# A mutant marked "equivalent: WHY" in the list is shown to change no output: it is reported,
# not run, and not counted in the rate.
# Environment: MUTATE_MIN (90), MUTATE_DIR (a scratch folder, kept; default a temporary one,
# removed), MUTATE_TIMEOUT (seconds per test, 300), PERFMOD_NEUSIGHT, PERFMOD_MODERNDATA.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
list=$top/scripts/mutants.txt
min=${MUTATE_MIN:-90}
tmo=${MUTATE_TIMEOUT:-300}
jobs=$(nproc 2>/dev/null || echo 2)
: "${PERFMOD_NEUSIGHT:=$top/../shared/neusight}"
: "${PERFMOD_MODERNDATA:=$top/../shared/moderndata}"
export PERFMOD_NEUSIGHT PERFMOD_MODERNDATA
command -v python3 >/dev/null || { echo "mutate: python3 is needed to apply the mutants" >&2; exit 2; }
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
  { echo "mutate: $top is not a git checkout: the scratch copy is made of git's files" >&2; exit 2; }

if [ -n "${MUTATE_DIR:-}" ]; then
  work=$MUTATE_DIR
  rm -rf "$work/tree" "$work/m" && mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/perfmod-mutate.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
fi
tree=$work/tree
mkdir "$tree"

# The mutants: one file per mutant (file, needle, replacement, first tests, title), made by
# python3, which also checks each needle occurs once in its file.
python3 - "$list" "$top" "$work/m" <<'EOF' || exit 2
import os, sys
path, top, out = sys.argv[1:4]
os.makedirs(out)
muts, cur = [], None
for no, line in enumerate(open(path, encoding="utf-8"), 1):
    line = line.rstrip("\n")
    where = f"{path}:{no}"
    if line.startswith("@ "):
        f, _, title = line[2:].partition(": ")
        cur = {"file": f.strip(), "title": title, "minus": None, "plus": None, "first": "",
               "at": where, "equivalent": ""}
        muts.append(cur)
    elif line.startswith("-") and cur is not None and cur["minus"] is None:
        cur["minus"] = line[2:] if line.startswith("- ") else line[1:]
    elif line.startswith("+") and cur is not None and cur["plus"] is None:
        cur["plus"] = line[2:] if line.startswith("+ ") else ""
    elif line.startswith("first:") and cur is not None:
        cur["first"] = line[6:].strip()
    elif line.startswith("equivalent:") and cur is not None:
        cur["equivalent"] = line[11:].strip()
    elif line.strip() == "" or line.startswith("#"):
        continue
    else:
        sys.exit(f"{where}: not a mutant's line: {line!r}")
for i, m in enumerate(muts, 1):
    if m["minus"] is None or m["plus"] is None:
        sys.exit(f"{m['at']}: a mutant needs a '-' and a '+' line")
    src = os.path.join(top, m["file"])
    try:
        text = open(src, encoding="utf-8").read()
    except OSError as e:
        sys.exit(f"{m['at']}: {m['file']}: {e.strerror}")
    n = text.count(m["minus"])
    if n != 1:
        sys.exit(f"{m['at']}: {m['file']}: the text is found {n} times, not once: {m['minus']!r}")
    d = os.path.join(out, "%02d" % i)
    os.makedirs(d)
    for k in ("file", "first", "title", "equivalent"):
        open(os.path.join(d, k), "w").write(m[k] + "\n")
    open(os.path.join(d, "minus"), "w").write(m["minus"])
    open(os.path.join(d, "plus"), "w").write(m["plus"])
print(len(muts))
EOF
total=$(ls "$work/m" | wc -l)

echo "mutate: copying the tree to $tree and building it"
(cd "$top" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$tree" ||
  exit 2
(cd "$tree" && autoreconf -fi && ./configure -q && make -j"$jobs" && make -j"$jobs" check TESTS=) \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "mutate: the unmutated tree does not build" >&2; exit 2; }
tests=$(cd "$tree" && printf 'print-tests:\n\t@echo $(TESTS)\n' | make -s -f Makefile -f - print-tests)

# run_test T: 0 when test T passes in the scratch tree (exit 0, some "ok", no "not ok").
run_test () {
  (cd "$tree" && top_srcdir=$tree top_builddir=$tree PERFMOD_PLUGIN_DIR=$tree/plugins/.libs \
     PERFMOD_DATADIR=$tree MAKE=make CC=${CC:-gcc} CXX=${CXX:-g++} \
     timeout "$tmo" sh -c 'case $1 in *.sh) exec sh "$1" ;; *) exec "./$1" ;; esac' run "$1" \
     </dev/null >"$work/out" 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] && grep -q '^ok' "$work/out" && ! grep -Eq '^(not ok|Bail out!)' "$work/out"
}

# The unmutated suite passes, and each test's time orders the runs: quick ones first.
echo "mutate: the unmutated suite, timed"
: >"$work/times"
for t in $tests; do
  s=$(date +%s.%N)
  run_test "$t" || { grep -E '^(not ok|Bail)' "$work/out" | head; echo "mutate: $t fails without a mutant" >&2; exit 2; }
  e=$(date +%s.%N)
  awk -v t="$t" -v s="$s" -v e="$e" 'BEGIN { print t, e - s }' >>"$work/times"
done
order=$(sort -k2 -g "$work/times" | cut -d' ' -f1)

# short T: the test's name as the lists write it (t0400 for tests/t0400-strategy.sh)
short () { basename "$1" .sh | sed 's/^\(t[0-9][0-9]*\)-.*/\1/'; }

ids=${*:-$(ls "$work/m")}
killed=0 n=0 survivors=
for id in $ids; do
  id=${id#0}
  d=$work/m/$(printf %02d "$id" 2>/dev/null)
  [ -d "$d" ] || { echo "mutate: no mutant $id (1 to $total)" >&2; exit 2; }
  f=$(cat "$d/file") title=$(cat "$d/title") first=$(cat "$d/first")
  if [ -n "$(cat "$d/equivalent")" ]; then   # shown to change no output: not run, not counted
    printf 'mutant %2d equivalent (%s)   %s: %s\n' "$id" "$(cat "$d/equivalent")" "$f" "$title"
    continue
  fi
  cp "$tree/$f" "$work/orig"
  python3 -c 'import sys
p, a, b = sys.argv[1:4]
t = open(p).read(); m = open(a).read(); r = open(b).read()
open(p, "w").write(t.replace(m, r, 1))' "$tree/$f" "$d/minus" "$d/plus"
  n=$((n + 1))
  if ! (cd "$tree" && make -j"$jobs" && make -j"$jobs" check TESTS=) >"$work/mbuild.log" 2>&1; then
    cp "$work/orig" "$tree/$f"
    tail -20 "$work/mbuild.log"
    echo "mutate: mutant $id ($f: $title) does not build: mend scripts/mutants.txt" >&2
    exit 2
  fi
  # the named tests first, then the rest, quickest first
  run=
  for s in $first; do
    for t in $tests; do [ "$(short "$t")" = "$s" ] && run="$run $t"; done
  done
  for t in $order; do
    case " $run " in *" $t "*) ;; *) run="$run $t" ;; esac
  done
  by=
  for t in $run; do
    run_test "$t" || { by=$t; break; }
  done
  if [ -n "$by" ]; then
    killed=$((killed + 1))
    printf 'mutant %2d killed by %-28s %s: %s\n' "$id" "$(short "$by")" "$f" "$title"
  else
    survivors="$survivors $id"
    printf 'mutant %2d SURVIVED                        %s: %s\n' "$id" "$f" "$title"
  fi
  cp "$work/orig" "$tree/$f"
done
rate=$((n > 0 ? 100 * killed / n : 0))
echo "mutate: $killed of $n mutants killed ($rate %); survivors:${survivors:- none}"
[ "$rate" -ge "$min" ] || { echo "mutate: kill rate under $min %" >&2; exit 1; }
