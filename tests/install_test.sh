#!/bin/sh
# make install into a temporary PREFIX (and a DESTDIR staging), then build a user program with
# `cc prog.c $(pkg-config --cflags --libs tinytorch)` against the shared and the static library
# and run it: the shared build through -Wl,-rpath and through LD_LIBRARY_PATH (as the README's
# install section says), checking that it needs libtinytorch.so.0 by its SONAME; then a CMake
# project with find_package(tinytorch) against the same prefix, shared and static; the installed
# programs run from /tmp with the installed GPT-2 vocabulary and corpus, TINYTORCH_DATA before
# them, and the message of a miss.
cc=${1:-cc}
build=${2:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

make -s install BUILD="$build" PREFIX="$tmp/usr" > "$tmp/install.log" ||
    fail "make install failed"
for f in include/tinytorch/tinytorch.h include/tinytorch/tensor/tensor.h \
         include/tinytorch/autograd/autograd.h include/tinytorch/tensor/ops.def \
         lib/libtinytorch.a lib/libtinytorch.so.0.1.0 lib/pkgconfig/tinytorch.pc \
         lib/cmake/tinytorch/tinytorchConfig.cmake \
         lib/cmake/tinytorch/tinytorchConfigVersion.cmake; do
    [ -f "$tmp/usr/$f" ] || fail "missing $f"
done
[ "$(readlink "$tmp/usr/lib/libtinytorch.so")" = libtinytorch.so.0 ] &&
    [ "$(readlink "$tmp/usr/lib/libtinytorch.so.0")" = libtinytorch.so.0.1.0 ] ||
    fail "lib/libtinytorch.so -> .so.0 -> .so.0.1.0 links are missing"
[ -z "$(find "$tmp/usr/include" -name '*_internal.h' -o -name 'kernels*.h')" ] ||
    fail "internal headers were installed"
grep -q "Wl,-rpath,$tmp/usr/lib" "$tmp/install.log" ||
    fail "make install into a custom PREFIX does not say how programs find the library"

export PKG_CONFIG_PATH="$tmp/usr/lib/pkgconfig"
flags=$(pkg-config --cflags --libs tinytorch) || fail "pkg-config does not find tinytorch"
[ "$(pkg-config --modversion tinytorch)" = 0.1.0 ] || fail "tinytorch.pc has no version 0.1.0"
mkdir "$tmp/user" && cp examples/tour.c "$tmp/user/my_model.c"
cd "$tmp/user" || fail "no $tmp/user"

# Shared, with the rpath the README shows for a custom PREFIX.
$cc -std=c11 my_model.c -o my_model $flags -Wl,-rpath,"$tmp/usr/lib" ||
    fail "building against the shared library failed"
./my_model > out_shared.txt || fail "the shared-library build did not run"
grep -q 'shape=(4, 1)' out_shared.txt || fail "the shared-library build printed the wrong thing"
if command -v readelf >/dev/null 2>&1; then
    readelf -d my_model | grep -q 'NEEDED.*\[libtinytorch\.so\.0\]' ||
        fail "the program does not need libtinytorch.so.0 (the library has no SONAME?)"
fi
# Shared, without an rpath: LD_LIBRARY_PATH finds libtinytorch.so.0.
$cc -std=c11 my_model.c -o my_model_norpath $flags ||
    fail "building against the shared library without an rpath failed"
LD_LIBRARY_PATH="$tmp/usr/lib" ./my_model_norpath | grep -q 'shape=(4, 1)' ||
    fail "the shared-library build did not run with LD_LIBRARY_PATH"

# Static: the archive named explicitly, the rest of the link line from the .pc.
$cc -std=c11 my_model.c -o my_model_static $(pkg-config --cflags tinytorch) \
    "$tmp/usr/lib/libtinytorch.a" $(pkg-config --libs-only-other tinytorch) -lm ||
    fail "building against the static library failed"
./my_model_static | grep -q 'shape=(4, 1)' || fail "the static build did not run"
if command -v ldd >/dev/null 2>&1 && ldd ./my_model_static | grep -q libtinytorch; then
    fail "the static build loads libtinytorch.so"
fi

# CMake: find_package(tinytorch) from the prefix, the imported target tinytorch::tinytorch.
cmake_build() {  # cmake_build <dir> <extra cmake args...>: configure and build the consumer
    dir=$1; shift
    cmake -S "$tmp/cmake" -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$tmp/usr" \
        "$@" > "$dir.log" 2>&1 && cmake --build "$dir" >> "$dir.log" 2>&1
}
mkdir "$tmp/cmake" && cp my_model.c "$tmp/cmake/" || fail "no $tmp/cmake"
cat > "$tmp/cmake/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(my_model C)
set(TT_VERSION 0.1 CACHE STRING "the version find_package asks for")
find_package(tinytorch ${TT_VERSION} REQUIRED)
add_executable(my_model my_model.c)
target_link_libraries(my_model PRIVATE tinytorch::tinytorch)
CMAKE
cmake_build "$tmp/cm_shared" || { cat "$tmp/cm_shared.log"; fail "the CMake build failed"; }
"$tmp/cm_shared/my_model" | grep -q 'shape=(4, 1)' || fail "the CMake shared build did not run"
if command -v readelf >/dev/null 2>&1; then
    readelf -d "$tmp/cm_shared/my_model" | grep -q 'NEEDED.*\[libtinytorch\.so\.0\]' ||
        fail "the CMake build does not need libtinytorch.so.0"
fi
cmake_build "$tmp/cm_static" -Dtinytorch_USE_STATIC_LIBS=ON ||
    { cat "$tmp/cm_static.log"; fail "the CMake static build failed"; }
"$tmp/cm_static/my_model" | grep -q 'shape=(4, 1)' || fail "the CMake static build did not run"
if command -v ldd >/dev/null 2>&1 && ldd "$tmp/cm_static/my_model" | grep -q libtinytorch; then
    fail "the CMake static build loads libtinytorch.so"
fi
# The version file: 0.1 and 0.1.0 are accepted (above); 0.2 and 1.0 are not.
for v in 0.2 1.0; do
    ! cmake_build "$tmp/cm_v$v" -DTT_VERSION=$v ||
        fail "find_package(tinytorch $v) accepted version 0.1.0"
    tr -s ' \n' '  ' < "$tmp/cm_v$v.log" |
        grep -q "compatible with requested version \"$v\".*tinytorchConfig.cmake, version: 0.1.0" ||
        fail "find_package(tinytorch $v) failed for another reason than the version"
done
cd - >/dev/null || fail "cd back"

# The programs and their data: from another directory, gpt finds GPT-2's vocabulary and the
# default corpus where make install put them (PREFIX/share/tinytorch); $TINYTORCH_DATA comes
# first; with neither, the error names every place it looked and the fix.
unset TINYTORCH_DATA
share="$tmp/usr/share/tinytorch"
for f in bin/gpt bin/char_gpt bin/char_lstm bin/lenet share/tinytorch/gpt2/encoder.json \
         share/tinytorch/gpt2/vocab.bpe share/tinytorch/tinyshakespeare.txt; do
    [ -f "$tmp/usr/$f" ] || fail "missing $f"
done
cmp -s data/gpt2/vocab.bpe "$share/gpt2/vocab.bpe" || fail "the installed vocab.bpe differs"
here=$(pwd)
cd /tmp || fail "no /tmp"
[ "$(printf 'Hello world' | "$tmp/usr/bin/gpt" encode --tokenizer gpt2)" = "15496 995" ] ||
    fail "the installed gpt run from /tmp does not encode with --tokenizer gpt2"
[ "$("$tmp/usr/bin/gpt" tokenize --tokenizer gpt2)" = \
  "tokens=338025 train=301966 val=36059" ] ||
    fail "the installed gpt run from /tmp does not find the installed default corpus"
mkdir -p "$tmp/alt/gpt2" && echo 'not json' > "$tmp/alt/gpt2/encoder.json" &&
    cp "$share/gpt2/vocab.bpe" "$tmp/alt/gpt2/" || fail "no $tmp/alt"
TINYTORCH_DATA="$tmp/alt" "$tmp/usr/bin/gpt" encode --tokenizer gpt2 < /dev/null \
    > /dev/null 2> "$tmp/env.err" && fail "a broken vocab under TINYTORCH_DATA was not read"
grep -qF "$tmp/alt/gpt2/encoder.json" "$tmp/env.err" ||
    fail "TINYTORCH_DATA does not come before the install location: $(cat "$tmp/env.err")"
mv "$share" "$tmp/moved" || fail "cannot move $share"
[ "$(printf 'Hello world' | TINYTORCH_DATA="$tmp/moved" "$tmp/usr/bin/gpt" encode \
     --tokenizer gpt2)" = "15496 995" ] || fail "gpt does not read TINYTORCH_DATA"
printf 'Hello' | "$tmp/usr/bin/gpt" encode --tokenizer gpt2 > /dev/null 2> "$tmp/miss.err"
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/miss.err")" = 1 ] &&
    grep -qF "gpt: --tokenizer gpt2: data file 'gpt2/encoder.json' not found: looked in \
\$TINYTORCH_DATA (not set), $share/gpt2/encoder.json (the install location), not $here/data \
(the source tree: this program runs outside it); run \`make install\` (or \`make data\` in the \
source tree), or set TINYTORCH_DATA to a folder that holds gpt2/encoder.json" "$tmp/miss.err" ||
    fail "a missing vocabulary (exit $rc) does not name every place: $(cat "$tmp/miss.err")"
mv "$tmp/moved" "$share" || fail "cannot move $share back"
cd "$here" || fail "cd back"

make -s install BUILD="$build" DESTDIR="$tmp/stage" PREFIX=/opt/tt >/dev/null ||
    fail "DESTDIR install failed"
[ -f "$tmp/stage/opt/tt/lib/libtinytorch.so.0.1.0" ] && [ -x "$tmp/stage/opt/tt/bin/gpt" ] &&
    [ -f "$tmp/stage/opt/tt/share/tinytorch/gpt2/encoder.json" ] || fail "DESTDIR was not honoured"
grep -q '^prefix=/opt/tt$' "$tmp/stage/opt/tt/lib/pkgconfig/tinytorch.pc" ||
    fail "the staged .pc does not name the final prefix"
[ -f "$tmp/stage/opt/tt/lib/cmake/tinytorch/tinytorchConfig.cmake" ] ||
    fail "the staged install has no tinytorchConfig.cmake"
make -s uninstall BUILD="$build" PREFIX="$tmp/usr" >/dev/null || fail "make uninstall failed"
[ -z "$(find "$tmp/usr/lib" -name 'libtinytorch*')" ] || fail "make uninstall left libraries"
[ ! -e "$tmp/usr/lib/cmake" ] || fail "make uninstall left lib/cmake"
[ ! -e "$tmp/usr/bin/gpt" ] && [ ! -e "$tmp/usr/share/tinytorch" ] ||
    fail "make uninstall left the programs or their data"
echo "install test: ok (headers, libtinytorch.a, libtinytorch.so.0.1.0 with its SONAME and" \
     "links, tinytorch.pc, tinytorchConfig.cmake; shared (rpath, LD_LIBRARY_PATH) and static" \
     "builds ran, with pkg-config and with CMake's find_package; the programs ran from /tmp" \
     "with the installed data, TINYTORCH_DATA and a miss's message)"
