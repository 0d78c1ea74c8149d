// Thread count and OpenMP wait policy under contention: runs `bench_train train baby N` as a
// child process for 1 and 2 threads, for each wait policy of idle workers, with the cores
// free and with a busy process pinned to one core, and prints each median step time.
// Never part of `make test`.
//
//   bench_threads BENCH_TRAIN    BENCH_TRAIN: the path of the bench_train binary
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tinytorch.h"

typedef struct policy {
    const char *name;
    const char *wait_policy;  // OMP_WAIT_POLICY, or NULL for unset
    const char *spincount;    // GOMP_SPINCOUNT, or NULL for unset
} policy;

static const policy policies[] = {
    {"libgomp-default", NULL, NULL},  // 300,000 spins (~3 ms), then sleep
    {"passive", "passive", NULL},     // sleep at once
    {"spin-1000", NULL, "1000"},      // ~10 us
    {"spin-10000", NULL, "10000"},    // ~100 us
};

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

// Runs bench_train with the policy's environment; returns its median ms per step, or -1.
static double run_step(const char *bench_train, int threads, const policy *p) {
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
        if (p->wait_policy) setenv("OMP_WAIT_POLICY", p->wait_policy, 1);
        if (p->spincount) setenv("GOMP_SPINCOUNT", p->spincount, 1);
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

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: bench_threads PATH/bench_train\n");
        return 2;
    }
    int fail = 0;
    for (int busy = 0; busy <= 1; busy++) {
        pid_t hog = busy ? start_busy() : 0;
        if (hog < 0) return 1;
        for (int threads = 1; threads <= 2; threads++)
            for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
                double ms = run_step(argv[1], threads, &policies[i]);
                if (ms < 0) fail = 1;
                printf("bench threads config=baby load=%s threads=%d wait=%s "
                       "ms_per_step=%.2f\n",
                       busy ? "busy-core" : "none", threads, policies[i].name, ms);
                fflush(stdout);
            }
        if (hog > 0) {
            kill(hog, SIGKILL);
            waitpid(hog, NULL, 0);
        }
    }
    return fail;
}
