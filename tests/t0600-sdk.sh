#!/bin/sh
# t0600-sdk.sh: install perfmod into a temporary prefix, build the example plugin out of tree with
# pkg-config, and run a prediction with it through --plugin-path.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 7
# make install with DESTDIR: the configured prefix, staged under $TMP/dest.
dest="$TMP/dest"
(cd "$top_builddir" && ${MAKE:-make} install DESTDIR="$dest" >"$TMP/install.log" 2>&1)
ok $? "make install DESTDIR=..."
bin=$(find "$dest" -path '*/bin/perfmod' | head -1)
pc=$(find "$dest" -name perfmod.pc | head -1)
plugdir=$("$bin" --version | sed -n 's/^plugin directory: //p')
datadir=$("$bin" --version | sed -n 's/^data directory: //p')
ok $([ -f "$dest$plugdir/roofline.so" ] && [ ! -e "$dest$plugdir/roofline.la" ] && [ -f "$dest$datadir/gpus.d/10-neusight.ini" ] && echo 0 || echo 1) \
  "plugins installed as NAME.so where perfmod looks for them, data beside"
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$dest"
pd=$(pkg-config --variable=plugindir perfmod)
ok $([ "$pd" = "$dest$plugdir" ] && echo 0 || echo 1) "perfmod.pc exports the plugin directory perfmod uses ($plugdir)"

cp -r "$top_srcdir/examples/predictor" "$TMP/example"
chmod -R u+w "$TMP/example"
(cd "$TMP/example" && ${MAKE:-make} CC="${CC:-cc}" >"$TMP/build.log" 2>&1)
ok $? "the example builds out of tree with pkg-config --cflags --libs perfmod"
[ -f "$TMP/example/example.so" ] || diag "$(cat "$TMP/build.log")"

# The installed perfmod with its installed plugins and data (staged), plus the example.
export PERFMOD_PLUGIN_DIR="$dest$plugdir" PERFMOD_DATADIR="$dest$datadir"
"$bin" --plugin-path "$TMP/example" --predictor roofline,example --format csv >"$TMP/out" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 0 ] && grep -q '^example,' "$TMP/out" && grep -q '^roofline,' "$TMP/out" && echo 0 || echo 1) \
  "the installed perfmod predicts with the example beside roofline"
[ $rc -eq 0 ] || diag "$(cat "$TMP/err")"
ok $(awk -F, '$1 == "roofline" { r = $2 } $1 == "example" { e = $2 } END { exit !(e > r) }' "$TMP/out"; echo $?) \
  "the example (80% of peaks) predicts slower than roofline"
EXAMPLE_EFFICIENCY=7 "$bin" --plugin-path "$TMP/example" plugins >"$TMP/out" 2>"$TMP/err"
ok $(grep -q "example: init failed: EXAMPLE_EFFICIENCY must be in (0, 1\], got '7'" "$TMP/err" && ! grep -q '^example' "$TMP/out"; echo $?) \
  "the example's init error reaches the user"
finish
