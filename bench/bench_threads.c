// Threads under contention: runs `bench_train train baby N` as a child process on 1 and 2
// threads, with the cores idle and with a busy process pinned to the last core, RUNS times
// each (alternating), and prints each median step time and the 2-thread / 1-thread ratio.
// Given a second bench_train (e.g. one built from an older commit), runs it alongside, as
// "old". Never part of `make test`.
//
//   bench_threads BENCH_TRAIN [OLD_BENCH_TRAIN]
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNS 3

// A process that keeps the last CPU busy until it is killed.
static pid_t start_busy(void) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(ncpu > 1 ? (int)ncpu - 1 : 0, &set);
    sched_setaffinity(0, sizeof set, &set);
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;
}

// Runs bench_train on the given thread count; returns its median ms per step, or -1.
static double run_step(const char *bench_train, int threads) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        unsetenv("OMP_WAIT_POLICY");
        unsetenv("GOMP_SPINCOUNT");
        unsetenv("OMP_NUM_THREADS");
        unsetenv("TT_NUM_THREADS");
        char nt[16];
        snprintf(nt, sizeof nt, "%d", threads);
        execl(bench_train, bench_train, "train", "baby", nt, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char out[1024] = {0};
    size_t len = 0;
    ssize_t k;
    while (len + 1 < sizeof out && (k = read(fd[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)k;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    const char *ms = strstr(out, "ms_per_step=");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !ms) return -1;
    return atof(ms + strlen("ms_per_step="));
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: bench_threads PATH/bench_train [PATH/old_bench_train]\n");
        return 2;
    }
    const char *bins[2] = {argv[1], argc == 3 ? argv[2] : NULL};
    const char *names[2] = {"new", "old"};
    int fail = 0;
    for (int busy = 0; busy <= 1; busy++) {
        pid_t hog = busy ? start_busy() : 0;
        if (hog < 0) return 1;
        double ms[2][2][RUNS];  // [binary][threads - 1][run]
        for (int r = 0; r < RUNS; r++)  // alternating: binaries and counts see the same load
            for (int b = 0; b < 2; b++)
                for (int t = 1; t <= 2 && bins[b]; t++) ms[b][t - 1][r] = run_step(bins[b], t);
        for (int b = 0; b < 2 && bins[b]; b++) {
            double med[2];
            for (int t = 0; t < 2; t++) {
                qsort(ms[b][t], RUNS, sizeof(double), cmp_double);
                med[t] = ms[b][t][RUNS / 2];
                if (ms[b][t][0] < 0) fail = 1;
            }
            printf("bench threads config=baby load=%s build=%s ms_1thread=%.2f ms_2threads=%.2f "
                   "ratio_2_over_1=%.2f runs=%d\n", busy ? "busy-core" : "idle", names[b],
                   med[0], med[1], med[1] / med[0], RUNS);
            fflush(stdout);
        }
        if (hog > 0) {
            kill(hog, SIGKILL);
            waitpid(hog, NULL, 0);
        }
    }
    return fail;
}
