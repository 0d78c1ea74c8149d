#!/bin/sh
# Installs what `make test-aarch64` needs, if it is missing: Debian's cross compiler
# (gcc-aarch64-linux-gnu), qemu-user (qemu-aarch64 runs the tests) and the arm64 builds of the
# libraries the library and the suites link (libxxhash-dev, libjansson-dev, libpcre2-dev,
# zlib1g-dev, check, and libgomp1 for OpenMP at run time), through Debian's multiarch: it adds
# the arm64 architecture to dpkg first. Plain `make deps` and `make test` never run it.
# AARCH64_CC and AARCH64_QEMU (the command that runs an arm64 program) as in the Makefile.
# With apt-get and root it installs them; otherwise it prints the exact commands to run.
# --quiet: say nothing when everything is there.
quiet=0
[ "$1" = "--quiet" ] && quiet=1
cc=${AARCH64_CC:-aarch64-linux-gnu-gcc}
missing=""

have_header() {  # have_header <header> [cflags]: the cross compiler finds the arm64 header
    printf '#include <%s>\nint main(void){return 0;}\n' "$1" |
        "$cc" $2 -x c - -o /dev/null >/dev/null 2>&1
}

arm64_libs="libxxhash-dev:arm64 libjansson-dev:arm64 libpcre2-dev:arm64 zlib1g-dev:arm64"
arm64_libs="$arm64_libs check:arm64 libgomp1:arm64"
if ! command -v "$cc" >/dev/null 2>&1; then  # a fresh machine: all of it
    missing=" gcc-aarch64-linux-gnu qemu-user $arm64_libs"
else
    have_header xxhash.h || missing="$missing libxxhash-dev:arm64"
    have_header jansson.h || missing="$missing libjansson-dev:arm64"
    have_header pcre2.h -DPCRE2_CODE_UNIT_WIDTH=8 || missing="$missing libpcre2-dev:arm64"
    have_header zlib.h || missing="$missing zlib1g-dev:arm64"
    have_header check.h || missing="$missing check:arm64"
fi
qemu=${AARCH64_QEMU:-qemu-aarch64 -L /}
if ! command -v "$cc" >/dev/null 2>&1; then
    :
elif ! command -v "${qemu%% *}" >/dev/null 2>&1; then
    missing="$missing qemu-user libgomp1:arm64"
else  # an OpenMP program runs: libgomp1:arm64
    tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
    printf '#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n' |
        "$cc" -fopenmp -x c - -o "$tmp/omp" >/dev/null 2>&1 &&
        $qemu "$tmp/omp" >/dev/null 2>&1 || missing="$missing libgomp1:arm64"
fi

if [ -z "$missing" ]; then
    [ $quiet = 1 ] ||
        echo "deps-aarch64: everything is installed ($cc, qemu-aarch64, the arm64" \
             "libxxhash-dev, libjansson-dev, libpcre2-dev, zlib1g-dev, check and libgomp1)"
    exit 0
fi

arch="dpkg --add-architecture arm64"
cmd="apt-get install -y$missing"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "deps-aarch64: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    if ! { $arch && apt-get update -qq && $cmd -qq; } >/dev/null; then
        echo "deps-aarch64: '$arch && apt-get update && $cmd' failed; run it by hand" \
             "and retry" >&2
        exit 1
    fi
    exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
    echo "deps-aarch64: missing:$missing. Run: sudo $arch && sudo apt-get update &&" \
         "sudo $cmd" >&2
else
    echo "deps-aarch64: missing:$missing. Install an aarch64 cross compiler, qemu-user and" \
         "the arm64 builds of xxHash, Jansson, PCRE2, zlib and Check" >&2
fi
exit 1
