// What the fuzz targets (tests/fuzz_*.c) share: the crash report and the private temp
// directory their files go to. Static functions, included by each target once.
#ifndef TT_TESTS_FUZZ_UTIL_H
#define TT_TESTS_FUZZ_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// A broken invariant: "fuzz: <message>" on stderr, then abort (libFuzzer saves the input).
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void fuzz_crash(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

static char fuzz_dir[64];              // the target's temp directory
static const char *const *fuzz_files;  // the names it writes there, NULL-terminated

// out = fuzz_dir/name.
static void fuzz_path(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", fuzz_dir, name);
}

static void fuzz_remove_dir(void) {
    char path[128];
    for (const char *const *f = fuzz_files; *f; f++) {
        fuzz_path(path, sizeof path, *f);
        unlink(path);
    }
    rmdir(fuzz_dir);
}

// The start of every target's LLVMFuzzerInitialize: TT_NO_CACHE=1 (freed buffers go back to
// malloc, so ASan sees every misuse) and a fresh directory tt_fuzz_<tag>_* in /dev/shm (else
// /tmp), removed at exit with the files named in files (NULL-terminated, static).
static void fuzz_setup(const char *tag, const char *const *files) {
    setenv("TT_NO_CACHE", "1", 1);
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/tt_fuzz_%s_XXXXXX", base, tag);
    if (!mkdtemp(fuzz_dir)) {
        fprintf(stderr, "fuzz: cannot create a temp directory in %s: %s\n", base,
                strerror(errno));
        exit(1);
    }
    fuzz_files = files;
    atexit(fuzz_remove_dir);
}

#ifdef TT_FUZZ_REPLAY
// The replay driver's loop (a target built with -DTT_FUZZ_REPLAY, run on the corpus by make
// test): each file's bytes through LLVMFuzzerTestOneInput. 1, with "prog: <error>" on stderr,
// when a file cannot be read; 0 when all ran.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static inline int fuzz_replay_files(const char *prog, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        size_t n;
        unsigned char *buf;  // NULL for an empty file
        if (tt_read_file(argv[i], &buf, &n) != TT_OK) {
            fprintf(stderr, "%s: %s\n", prog, tt_last_error());
            return 1;
        }
        static const unsigned char empty[1];
        LLVMFuzzerTestOneInput(buf ? buf : empty, n);
        free(buf);
    }
    return 0;
}
#endif

#endif  // TT_TESTS_FUZZ_UTIL_H
