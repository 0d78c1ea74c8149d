// The timing helpers every bench/bench_*.c shares: a monotonic clock, the median of a set of
// timings, and the process's peak resident set size.
#ifndef TT_BENCH_UTIL_H
#define TT_BENCH_UTIL_H

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double now_ms(void) { return now_s() * 1e3; }

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Sorts v in place.
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

#endif  // TT_BENCH_UTIL_H
