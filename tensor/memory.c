// The machine's memory as a process may use it (physical memory, ulimit -v, the cgroup's
// memory.max) and the out-of-memory path of the counted allocator: one message naming the
// bytes and the call site, an optional hook (a program prints it and exits), then tt_fatal.
#include "tensor_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

// ---- the machine's memory ----

// The cgroup v2 limit of this process ("max" or absent: none), or -1.
static int64_t cgroup_limit(void) {
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (!f) return -1;
    char buf[64];
    int64_t v = -1;
    if (fgets(buf, sizeof buf, f)) {
        char *end;
        unsigned long long x = strtoull(buf, &end, 10);
        if (end != buf && (*end == '\n' || !*end) && x < (unsigned long long)INT64_MAX)
            v = (int64_t)x;
    }
    fclose(f);
    return v;
}

int64_t tt_memory_limit(const char **what) {
    const char *w = "physical memory";
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    int64_t lim = pages > 0 && size > 0 && pages <= INT64_MAX / size
                      ? (int64_t)pages * size : INT64_MAX;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)lim) {
        lim = (int64_t)rl.rlim_cur;
        w = "ulimit -v";
    }
    int64_t cg = cgroup_limit();
    if (cg > 0 && cg < lim) {
        lim = cg;
        w = "cgroup memory.max";
    }
    if (what) *what = w;
    return lim;
}

// ---- out of memory ----

static tt_oom_hook oom_hook;
static void *oom_hook_ctx;

tt_oom_hook tt_set_oom_hook(tt_oom_hook hook, void *ctx) {
    tt_oom_hook prev = oom_hook;
    oom_hook = hook;
    oom_hook_ctx = ctx;
    return prev;
}

void tt__out_of_memory(size_t nbytes, const char *file, int line, const char *func) {
    const char *what;
    int64_t lim = tt_memory_limit(&what);
    char msg[512];
    snprintf(msg, sizeof msg, "out of memory: %s could not allocate %zu bytes (%.2f GiB) at "
             "%s:%d, with %.2f GiB in live tensors and %.2f GiB of %s", func, nbytes,
             (double)nbytes / 1073741824.0, file, line, (double)tt_live_bytes() / 1073741824.0,
             (double)lim / 1073741824.0, what);
    if (oom_hook) oom_hook(msg, oom_hook_ctx);
    tt_fatal(file, line, func, "%s", msg);
}
