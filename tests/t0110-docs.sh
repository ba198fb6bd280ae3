#!/bin/sh
# t0110-docs.sh: the documentation cannot drift: every option of perfmod --help, kernel --help, search --help and serve --help is in perfmod(1), and every option perfmod(1) names is in one of them.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 4

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
finish
