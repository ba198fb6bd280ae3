#!/bin/sh
# t0600-sdk.sh: install perfmod into a temporary prefix, build the example plugin out of tree with
# pkg-config, and run a prediction with it through --plugin-path.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
plan 17
# make install with DESTDIR: the configured prefix, staged under $TMP/dest.
dest="$TMP/dest"
(cd "$top_builddir" && ${MAKE:-make} install DESTDIR="$dest" >"$TMP/install.log" 2>&1)
ok $? "make install DESTDIR=..."
bin=$(find "$dest" -path '*/bin/perfmod' | head -1)
pc=$(find "$dest" -name perfmod.pc | head -1)
plugdir=$("$bin" --version | sed -n 's/^plugin directory: //p')
datadir=$("$bin" --version | sed -n 's/^data directory: //p')
ok $([ -f "$dest$plugdir/roofline.so" ] && [ ! -e "$dest$plugdir/roofline.la" ] && [ -f "$dest$datadir/gpus.d/10-neusight.ini" ] &&
     python3 -c 'import json, sys; json.load(open(sys.argv[1]))["$defs"]["memory_gib"]' "$dest$datadir/perfmod.schema.json" &&
     echo 0 || echo 1) \
  "plugins installed as NAME.so where perfmod looks for them, data beside (the JSON Schema too)"
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$dest"
pd=$(pkg-config --variable=plugindir perfmod)
ok $([ "$pd" = "$dest$plugdir" ] && echo 0 || echo 1) "perfmod.pc exports the plugin directory perfmod uses ($plugdir)"

cp -r "$top_srcdir/examples/predictor" "$TMP/example"
chmod -R u+w "$TMP/example"
(cd "$TMP/example" && ${MAKE:-make} CC="${CC:-cc}" >"$TMP/build.log" 2>&1)
ok $? "the example plugin builds out of tree with pkg-config --cflags perfmod (links nothing)"
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
# libperfmod: the library example built against the installed header and library through
# pkg-config; its numbers are the installed CLI's for the same request.
libdir=$(dirname "$(find "$dest" -name 'libperfmod.so' | head -1)")
cp -r "$top_srcdir/examples/library" "$TMP/library"
chmod -R u+w "$TMP/library"
(cd "$TMP/library" && ${MAKE:-make} CC="${CC:-cc}" >"$TMP/lbuild.log" 2>&1)
ok $? "the libperfmod examples (predict, search) build out of tree with pkg-config --cflags --libs perfmod"
[ -f "$TMP/library/predict" ] || diag "$(cat "$TMP/lbuild.log")"
env $(san_env) LD_LIBRARY_PATH="$libdir" "$TMP/library/predict" gpt3-2.7b h100 tp=2,dp=4 64 2048 tile-mlp >"$TMP/lib" 2>"$TMP/err"
rc=$?
"$bin" --model gpt3-2.7b --gpu h100 --mode train --batch 64 --seq 2048 --strategy tp=2,dp=4 \
  --predictor tile-mlp --format json >"$TMP/cli" 2>/dev/null
e=$(jq -r '.predictions[0].step_ms' "$TMP/cli") m=$(jq -r '.predictions[0].memory_gib.total' "$TMP/cli")
ok $([ $rc -eq 0 ] && awk -v e="$e" -v m="$m" '{ d = $4 / e - 1; g = $10 / m - 1
     exit !(d < 1e-6 && d > -1e-6 && g < 1e-3 && g > -1e-3) }' "$TMP/lib" && echo 0 || echo 1) \
  "libperfmod gives the CLI's step ($e ms) and memory ($m GiB)"
[ $rc -eq 0 ] || diag "$(cat "$TMP/err")"
env $(san_env) LD_LIBRARY_PATH="$libdir" "$TMP/library/predict" gpt3-9b h100 tp=2 8 2048 >"$TMP/lib" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 1 ] && grep -q "perfmod_predict: .*gpt3-9b" "$TMP/err" && [ ! -s "$TMP/lib" ] && echo 0 || echo 1) \
  "a bad request: the library returns the reason, the process goes on"
# The search example: the installed CLI's csv for the same search, row for row.
[ -x "$TMP/library/search" ] || diag "$(cat "$TMP/lbuild.log")"
env $(san_env) LD_LIBRARY_PATH="$libdir" "$TMP/library/search" gpt3-2.7b h100 16 64 2048 5 tile-mlp >"$TMP/lsearch" 2>"$TMP/err"
rc=$?
"$bin" search --model gpt3-2.7b --gpu h100 --gpus 16 --global-batch 64 --seq 2048 --top 5 \
  --predictor tile-mlp --format csv >"$TMP/csearch" 2>/dev/null
ok $([ $rc -eq 0 ] && [ "$(wc -l < "$TMP/csearch")" -eq 6 ] && cmp -s "$TMP/lsearch" "$TMP/csearch" && echo 0 || echo 1) \
  "the libperfmod search example (pkg-config) prints the installed perfmod search's best 5"
[ $rc -eq 0 ] || diag "$(cat "$TMP/err")"
ok $(grep -q "^libperfmod .*gpt3-2.7b on 16 x .*: [0-9]* configurations, [0-9]* predicted" "$TMP/err" && echo 0 || echo 1) \
  "... with the counts"
env $(san_env) LD_LIBRARY_PATH="$libdir" "$TMP/library/search" gpt3-2.7b h100 0 64 2048 >"$TMP/lsearch" 2>"$TMP/err"
rc=$?
ok $([ $rc -eq 1 ] && grep -q "perfmod_search: search: gpus 0" "$TMP/err" && [ ! -s "$TMP/lsearch" ] && echo 0 || echo 1) \
  "a bad search: the library returns the reason, the process goes on"
pkg=$(find "$dest" -path '*/perfmod/__init__.py' | head -1)
if command -v python3 >/dev/null && grep -q '^PYTHON = [^:]' "$top_builddir/Makefile" 2>/dev/null; then
  env $(san_env) PYTHONPATH="$(dirname "$(dirname "$pkg")")" PERFMOD_LIBRARY="$libdir/libperfmod.so.0" python3 -c '
import perfmod
r = perfmod.predict("gpt3-2.7b", gpu="h100", strategy="tp=2,dp=4", batch=64, seq=2048)
print(r["step_ms"] > 0 and perfmod.__version__)' >"$TMP/py" 2>&1
  ok $([ -n "$pkg" ] && grep -qx "$("$bin" --version | sed -n '1s/^perfmod \([^ ]*\).*/\1/p')" "$TMP/py" && echo 0 || echo 1) \
    "make install puts the perfmod Python package in Python's site directory; it predicts"
  [ $tap_failed -eq 0 ] || diag "$(cat "$TMP/py")"
else
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP python3 not configured"
fi
# make install puts the package where the configured python3 looks under the prefix
# (Debian's: lib/python3.X/dist-packages below /usr/local), else where automake puts it
pyc=$(sed -n 's/^PYTHON = //p' "$top_builddir/Makefile")
prefix=$(sed -n 's/^prefix=//p' "$pc")
under=$([ -n "$pyc" ] && [ "$pyc" != : ] && "$pyc" -c 'import sys
p = sys.argv[1].rstrip("/") + "/"
print(" ".join(d for d in sys.path if d.startswith(p)))' "$prefix" 2>/dev/null)
site=$(dirname "$(dirname "${pkg#"$dest"}")")
if [ -n "$under" ]; then
  ok $([ -n "$pkg" ] && echo " $under " | grep -qF " $site "; echo $?) \
    "make install's Python package is in $site, on $pyc's path"
elif [ -n "$pyc" ] && [ "$pyc" != : ]; then
  # it looks nowhere there: automake's choice, which PYTHONPATH then names
  ver=$("$pyc" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  ok $([ -n "$pkg" ] && [ "$site" = "$prefix/lib/python$ver/site-packages" ]; echo $?) \
    "make install's Python package is in automake's $site ($pyc looks nowhere under $prefix)"
else
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP python3 not configured"
fi
# pip install ./python: the package made from its template with libperfmod's directory
# and version as pkg-config gives them (the staged perfmod.pc), by a python3 with pip,
# setuptools and wheel (Debian's python3-pip, python3-setuptools, python3-wheel); offline
py=
for p in python3 /usr/bin/python3; do
  command -v "$p" >/dev/null 2>&1 && "$p" -c 'import setuptools, wheel' 2>/dev/null &&
    "$p" -m pip --version >/dev/null 2>&1 && { py=$p; break; }
done
if [ -n "$py" ]; then
  cp -r "$top_srcdir/python" "$TMP/pysrc"         # pip builds in the tree it is given
  chmod -R u+w "$TMP/pysrc"
  rm -f "$TMP/pysrc/perfmod/__init__.py"
  "$py" -m pip install --no-build-isolation --no-deps --no-index --target "$TMP/pip" \
    "$TMP/pysrc" >"$TMP/pip.log" 2>&1
  env $(san_env) PYTHONPATH="$TMP/pip" "$py" -c '
import perfmod
r = perfmod.predict("gpt3-2.7b", gpu="h100", strategy="tp=2,dp=4", batch=64, seq=2048)
print(perfmod._LIBRARY, r["step_ms"] > 0, perfmod.__version__)' >"$TMP/pipy" 2>&1
  ok $([ "$(cat "$TMP/pipy")" = "$libdir/libperfmod.so.0 True $("$bin" --version | sed -n '1s/^perfmod \([^ ]*\).*/\1/p')" ]
       echo $?) "pip install ./python: libperfmod found through pkg-config ($libdir), it predicts"
  [ $tap_failed -eq 0 ] || diag "$(cat "$TMP/pipy" "$TMP/pip.log")"
else
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP no python3 with pip, setuptools and wheel"
fi
nm -D --defined-only "$libdir/libperfmod.so" | awk '$2 == "T" { print $3 }' | sort > "$TMP/syms"
ok $([ "$(tr '\n' ' ' < "$TMP/syms")" = "perfmod_close perfmod_open perfmod_predict perfmod_search perfmod_search_result_free perfmod_serve perfmod_version " ] &&
     echo 0 || echo 1) "libperfmod exports perfmod_* alone"
finish
