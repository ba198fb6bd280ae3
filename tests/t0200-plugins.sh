#!/bin/sh
# t0200-plugins.sh: the loader: listing, --plugin-path, and the bad fixtures refused while the rest load.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 11
FIX="$top_builddir/tests/.libs"

run_pm plugins
ok $([ $rc -eq 0 ] && grep -Eq '^roofline +predictor +[0-9.]+ +- +/.*/roofline\.so$' "$TMP/out" && echo 0 || echo 1) \
  "perfmod plugins lists roofline with kind, version and path"
ok $(for d in dp tp ep pp; do grep -Eq "^$d +parallelism +[^ ]+ +$d " "$TMP/out" || exit 1; done; echo 0) \
  "perfmod plugins lists dp, tp, ep, pp as parallelism plugins"

run_pm plugins --plugin-path "$FIX"
ok $([ $rc -eq 0 ] && grep -q '^roofline ' "$TMP/out" && echo 0 || echo 1) "with bad fixtures on the path, the good plugins still load"
ok $(grep -q 'fixture_wrongabi.so: refused: built for plugin ABI version 42, this perfmod speaks version 1' "$TMP/err"; echo $?) \
  "wrong ABI version refused with a clear message"
ok $(grep -q 'fixture_initfail: init failed: parameter file fixture.bin is missing' "$TMP/err"; echo $?) \
  "failing init refused with the plugin's own reason"
ok $(grep -q 'fixture_nopredict.so: refused: predictor without the mandatory predict callback' "$TMP/err"; echo $?) \
  "missing mandatory callback refused"
ok $(grep -q "fixture_misnamed.so: refused: declares the name 'roofline', but its file is named 'fixture_misnamed'" "$TMP/err"; echo $?) \
  "a plugin whose name does not match its file is refused"
ok $(grep -q fixture "$TMP/out"; [ $? -ne 0 ] && echo 0 || echo 1) "no refused plugin is listed"

run_pm --plugin-path "$FIX" --format csv
ok $([ $rc -eq 0 ] && grep -q '^tile-mlp,' "$TMP/out" && echo 0 || echo 1) "predictions run with refused plugins around"

# Never from the current directory: an empty plugin dir and cwd full of plugins.
mkdir "$TMP/empty"
(cd "$top_builddir/plugins/.libs" && PERFMOD_PLUGIN_DIR="$TMP/empty" "$PERFMOD" --format csv) >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 2 ] && grep -q "no such predictor plugin" "$TMP/err" && echo 0 || echo 1) \
  "plugins are not loaded from the current directory"

# A copy of roofline under another file name is refused (name must match file).
cp "$top_builddir/plugins/.libs/roofline.so" "$TMP/empty/other.so"
PERFMOD_PLUGIN_DIR="$TMP/empty" "$PERFMOD" plugins >"$TMP/out" 2>"$TMP/err"
ok $(grep -q "other.so: refused: declares the name 'roofline'" "$TMP/err"; echo $?) "renamed plugin file refused"
finish
