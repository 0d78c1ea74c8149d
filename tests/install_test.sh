#!/bin/sh
# make install into a temporary prefix (and a DESTDIR staging), then build a user program
# with `cc prog.c $(pkg-config --cflags --libs tinytorch)` against the shared and the static
# library, and run it.
cc=${1:-cc}
build=${2:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

make -s install BUILD="$build" PREFIX="$tmp/usr" >/dev/null || fail "make install failed"
for f in include/tinytorch/tinytorch.h include/tinytorch/tensor/tensor.h \
         include/tinytorch/autograd/autograd.h include/tinytorch/autograd/ops.def \
         lib/libtinytorch.a lib/libtinytorch.so lib/pkgconfig/tinytorch.pc; do
    [ -f "$tmp/usr/$f" ] || fail "missing $f"
done
[ -z "$(find "$tmp/usr/include" -name '*_internal.h' -o -name 'kernels*.h')" ] ||
    fail "internal headers were installed"

export PKG_CONFIG_PATH="$tmp/usr/lib/pkgconfig"
flags=$(pkg-config --cflags --libs tinytorch) || fail "pkg-config does not find tinytorch"
mkdir "$tmp/user" && cp examples/tour.c "$tmp/user/my_model.c"
( cd "$tmp/user" &&
  $cc -std=c11 my_model.c -o my_model $flags -Wl,-rpath,"$tmp/usr/lib" ) ||
    fail "building against the shared library failed"
"$tmp/user/my_model" | grep -q 'shape=(4, 1)' || fail "the shared-library build did not run"
( cd "$tmp/user" &&
  $cc -std=c11 my_model.c -o my_model_static $(pkg-config --cflags tinytorch) \
      "$tmp/usr/lib/libtinytorch.a" $(pkg-config --libs-only-other tinytorch) -lm ) ||
    fail "building against the static library failed"
"$tmp/user/my_model_static" | grep -q 'shape=(4, 1)' || fail "the static build did not run"

make -s install BUILD="$build" DESTDIR="$tmp/stage" PREFIX=/opt/tt >/dev/null ||
    fail "DESTDIR install failed"
[ -f "$tmp/stage/opt/tt/lib/libtinytorch.so" ] || fail "DESTDIR was not honoured"
grep -q '^prefix=/opt/tt$' "$tmp/stage/opt/tt/lib/pkgconfig/tinytorch.pc" ||
    fail "the staged .pc does not name the final prefix"
echo "install test: ok (headers, libtinytorch.a, libtinytorch.so, tinytorch.pc;" \
     "shared and static builds ran)"
