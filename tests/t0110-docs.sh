#!/bin/sh
# t0110-docs.sh: the documentation cannot drift: every option of perfmod --help, kernel --help, search --help and serve --help is in perfmod(1), and every option perfmod(1) names is in one of them; the man pages format without a warning; each EXAMPLES command of perfmod(1) runs; each command's --help is its own.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 12

{ "$PERFMOD" --help; "$PERFMOD" kernel --help; "$PERFMOD" search --help; "$PERFMOD" search --serve --help; "$PERFMOD" serve --help; } 2>&1 |
  grep -o -- '--[a-z][a-z0-9-]*' | sort -u > "$TMP/help"
# the man page's \-\-name (roff's escaped hyphens), configure's options left out
sed 's/\\-/-/g' "$top_srcdir/doc/perfmod.1" | grep -o -- '--[a-z][a-z0-9-]*' |
  grep -v -x -e '--without-mpi' -e '--enable-[a-z-]*' -e '--with-[a-z-]*' | sort -u > "$TMP/man"
missing=$(comm -23 "$TMP/help" "$TMP/man" | tr '\n' ' ')
ok $([ -z "$missing" ] && [ "$(wc -l < "$TMP/help")" -gt 40 ] && echo 0 || echo 1) \
  "every option of --help is in perfmod(1)${missing:+ (missing: $missing)}"
extra=$(comm -13 "$TMP/help" "$TMP/man" | tr '\n' ' ')
ok $([ -z "$extra" ] && echo 0 || echo 1) "every option perfmod(1) names is in a --help${extra:+ (not in --help: $extra)}"
ok $([ "$(wc -l < "$TMP/help")" -gt 40 ] && echo 0 || echo 1) "the --help texts were read ($(wc -l < "$TMP/help") options)"
# one version everywhere: no "since perfmod X" or "since X.Y" of another version in the
# headers, man pages and documents a user reads
v=$("$PERFMOD" --version 2>&1 | sed -n 's/^perfmod \([0-9][0-9.]*[0-9]\)\( .*\)*$/\1/p' | head -1)
stale=$(cd "$top_srcdir" && grep -n -i -E 'since (perfmod )?[0-9]+\.[0-9]+' include/*.h doc/*.1 doc/*.3 doc/*.md README.md |
        grep -v -i -E "since (perfmod )?$v([^0-9.]|\$)" | head -3)
ok $([ -n "$v" ] && [ -z "$stale" ] && echo 0 || echo 1) "no other version than $v named as a 'since'${stale:+: $stale}"

# the man pages format without a warning (groff -ww: every warning; man --warnings does this)
for page in perfmod.1 perfmod-plugin.3; do
  w=$(groff -ww -man -z -Tutf8 "$top_srcdir/doc/$page" 2>&1; echo "groff exit $?")
  ok $([ "$w" = "groff exit 0" ]; echo $?) "$page formats without a troff warning"
  [ "$w" = "groff exit 0" ] || diag "$w"
done

# every command of perfmod(1)'s EXAMPLES runs from the source tree (paths in them are its)
sed -n '/^\.SH EXAMPLES/,/^\.SH /p' "$top_srcdir/doc/perfmod.1" | awk '/^\.RS$/ { getline; print }' |
  sed 's/\\-/-/g' >"$TMP/examples"
n=0 bad=
while read -r cmd; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  (cd "$top_srcdir" && "$PERFMOD" ${cmd#perfmod }) </dev/null >"$TMP/ex.out" 2>"$TMP/ex.err" &&
    [ "$(grep -c . "$TMP/ex.out")" -ge 2 ] || bad="$bad [$cmd]"
done <"$TMP/examples"
ok $([ "$n" -ge 6 ] && [ -z "$bad" ]; echo $?) "perfmod(1)'s $n EXAMPLES run and print a result${bad:+; failed:$bad}"

# perfmod CMD --help is CMD's: its synopsis, not the other commands'
for cmd in eval reproduce train graph models; do
  run_pm "$cmd" --help
  ok $([ "$rc" -eq 0 ] && sed -n 1p "$TMP/out" | grep -q "^Usage: perfmod $cmd" &&
       ! grep -q 'perfmod search\|perfmod serve\|perfmod kernel' "$TMP/out" &&
       grep -q '^Exit status' "$TMP/out"; echo $?) "perfmod $cmd --help: its own synopsis"
done
finish
