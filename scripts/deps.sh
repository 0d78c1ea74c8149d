#!/bin/sh
# Installs what tinytorch.c needs to build and test, if it is missing:
# Check (unit tests), xxHash (checksums), Jansson (JSON: safetensors headers, GPT-2's
# encoder.json), PCRE2 (GPT-2's Unicode pre-tokenizer pattern), zlib (gzip IDX files),
# Fashion-MNIST (Debian's dataset-fashion-mnist: tests/test_idx.c), pkg-config, gcc's OpenMP
# runtime, clang with its libFuzzer runtime (make fuzz, which make test runs for 40 s) and CMake
# (tests/install_test.sh builds a find_package(tinytorch) consumer);
# and, for `make plot` only, gnuplot (without --quiet: `make test` does not need it); with
# MPI=1 in the environment (make deps MPI=1) also Open MPI (libopenmpi-dev, openmpi-bin).
# With apt-get and root it installs them; otherwise it prints the exact command to run.
# --quiet: say nothing when everything the build and tests need is already there.
quiet=0
[ "$1" = "--quiet" ] && quiet=1
missing=""

have_header() {  # have_header <header> [cflags]
    printf '#include <%s>\nint main(void){return 0;}\n' "$1" |
        ${CC:-cc} $2 -x c - -o /dev/null >/dev/null 2>&1
}

command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists check; then
    missing="$missing check"
fi
have_header xxhash.h || missing="$missing libxxhash-dev"
have_header jansson.h || missing="$missing libjansson-dev"
have_header pcre2.h -DPCRE2_CODE_UNIT_WIDTH=8 || missing="$missing libpcre2-dev"
have_header zlib.h || missing="$missing zlib1g-dev"
fmnist=/usr/share/datasets/fashion-mnist  # TT_FASHION_MNIST_DIR of data/idx.h
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
         t10k-labels-idx1-ubyte; do
    [ -f "$fmnist/$f.gz" ] || { missing="$missing dataset-fashion-mnist"; break; }
done
printf '#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n' |
    ${CC:-cc} -fopenmp -x c - -o /dev/null >/dev/null 2>&1 || missing="$missing libgomp1"
# clang and its libFuzzer + sanitizer runtime (Debian ships it as libclang-rt-<major>-dev, a
# package clang only recommends). FUZZ_CC overrides the compiler, as in the Makefile.
fuzz_cc=${FUZZ_CC:-clang}
have_fuzzer() {
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
        'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){return d && n;}' |
        "$fuzz_cc" -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1
}
fuzz_rt() {  # the runtime package of the installed clang: libclang-rt-14-dev for clang 14
    major=$("$fuzz_cc" -dumpversion 2>/dev/null | cut -d. -f1)
    if [ -n "$major" ] && { ! command -v apt-cache >/dev/null 2>&1 ||
                            apt-cache show "libclang-rt-$major-dev" >/dev/null 2>&1; }; then
        echo "libclang-rt-$major-dev"
    fi
}
if ! command -v "$fuzz_cc" >/dev/null 2>&1; then
    missing="$missing clang"
elif ! have_fuzzer; then
    rt=$(fuzz_rt)
    missing="$missing ${rt:-clang}"
fi
# Open MPI, only for `make MPI=1` (data-parallel training, dist/dist_mpi.c): its headers and
# library (pkg-config ompi-c) and mpirun.
if [ "${MPI:-0}" = 1 ]; then
    pkg-config --exists ompi-c 2>/dev/null || missing="$missing libopenmpi-dev"
    command -v mpirun >/dev/null 2>&1 || missing="$missing openmpi-bin"
fi
if [ $quiet = 0 ] && ! command -v gnuplot >/dev/null 2>&1; then
    missing="$missing gnuplot-nox"
fi

if [ -z "$missing" ]; then
    [ $quiet = 1 ] ||
        echo "deps: everything is installed (check, libxxhash-dev, libjansson-dev, libpcre2-dev," \
             "zlib1g-dev, dataset-fashion-mnist, pkg-config, cmake, OpenMP, clang with libFuzzer," \
             "gnuplot$( [ "${MPI:-0}" = 1 ] && echo ", Open MPI"))"
    exit 0
fi

cmd="apt-get install -y$missing"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "deps: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && $cmd -qq; } >/dev/null; then
        echo "deps: '$cmd' failed; run it by hand and retry" >&2
        exit 1
    fi
    # A clang installed just now may still lack its libFuzzer runtime.
    if command -v "$fuzz_cc" >/dev/null 2>&1 && ! have_fuzzer; then
        rt=$(fuzz_rt)
        if [ -z "$rt" ] || ! apt-get install -y -qq "$rt" >/dev/null || ! have_fuzzer; then
            echo "deps: $fuzz_cc cannot build a libFuzzer target" \
                 "(-fsanitize=fuzzer); install its compiler-rt (${rt:-libclang-rt-N-dev})" >&2
            exit 1
        fi
    fi
    exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
    echo "deps: missing:$missing. Run: sudo apt-get update && sudo $cmd" >&2
else
    echo "deps: missing:$missing. Install them with your package manager" \
         "(Debian/Ubuntu: apt-get install$missing)" >&2
fi
exit 1
