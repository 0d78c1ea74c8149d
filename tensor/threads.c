// The thread pool of the parallel kernels (tensor/parallel.h) and the thread count
// (tt_set_num_threads). A loop is cut into chunks that the calling thread and the workers claim
// from one atomic counter; idle threads spin, then sleep on a futex (Linux; elsewhere they nap
// 50 us at a time): long while the pool's threads run undisturbed, briefly once the OS has
// preempted one of them lately (spin_ns). Not a task system: one loop at a time, no nesting (inner loops
// run serially).
#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT, syscall
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tensor_internal.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#define MAX_THREADS 256
#define CHUNKS_PER_THREAD 8  // claimed dynamically: a late thread leaves little to the others
#define SPIN_LONG_NS 2000000   // idle threads' spin while the cores are ours (spin_ns)
#define SPIN_SHORT_NS 10000    // and once the OS has preempted one of the pool's threads
#define PREEMPT_WINDOW_NS 100000000  // how long contention counts as "lately"
#define PREEMPT_PER_S 60  // a thread's preemptions a second that mean another process wants a core

// ---- futex: sleep while *word == val, wake the sleepers ----

static void futex_wait(atomic_uint *word, unsigned val) {
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
#else
    if (atomic_load(word) == val) nanosleep(&(struct timespec){0, 50000}, NULL);
#endif
}

static void futex_wake(atomic_uint *word) {
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, MAX_THREADS, NULL, NULL, 0);
#else
    (void)word;
#endif
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// How long an idle thread spins before it sleeps. While the pool's threads run undisturbed,
// long: the next loop comes within microseconds and a futex wake-up would cost more than the
// spin. Once the OS preempts one of them often (more than PREEMPT_PER_S times a second in
// the last PREEMPT_WINDOW_NS: another process wants a core), briefly: a spinning thread holds
// a core that the OS would otherwise give to a thread of ours queued behind that process, so
// the step would wait for it. A shared machine's daemons preempt a thread now and then (here
// 20-30 times a second); that is not contention, and sleeping on it cost 3-5% of a 2-thread
// decode (30 futex wake-ups a token). Each thread reads its own involuntary context switches
// (getrusage, at most once a window) and publishes when it last saw them come that often.
static _Atomic int64_t last_preempt_ns = -PREEMPT_WINDOW_NS;

static int64_t spin_ns(void) {
    static _Thread_local int64_t checked = -PREEMPT_WINDOW_NS, nivcsw;
    int64_t now = now_ns();
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (now - checked >= PREEMPT_WINDOW_NS && getrusage(RUSAGE_THREAD, &ru) == 0) {
        if ((double)(ru.ru_nivcsw - nivcsw) * 1e9 > PREEMPT_PER_S * (double)(now - checked))
            atomic_store(&last_preempt_ns, now);
        nivcsw = ru.ru_nivcsw;
        checked = now;
    }
#else
    (void)checked;
    (void)nivcsw;
#endif
    return now - atomic_load(&last_preempt_ns) < PREEMPT_WINDOW_NS ? SPIN_SHORT_NS : SPIN_LONG_NS;
}

// ---- the pool ----
// A loop is a job: its fields, then `claim` = (job number << 32) | next chunk, published with
// release. A thread claims chunk c of job g by a compare-and-swap of claim from (g, c) to
// (g, c + 1), so a thread that wakes late can never claim a chunk of a later job; a job ends
// when `done` reaches its chunk count.

static struct {
    pthread_mutex_t lock;  // held by the thread whose loop is running (trylock: else serial)
    int nworkers;          // started workers (threads - 1)
    pthread_t workers[MAX_THREADS];
    _Atomic uint64_t claim;           // (job << 32) | next chunk
    atomic_uint job;                  // the job number, the workers' futex word
    atomic_uint done;                 // chunks finished, the caller's futex word
    atomic_int sleepers;              // workers asleep on job
    atomic_int caller_asleep;         // the caller is asleep on done
    atomic_bool stop;                 // workers exit
    _Atomic(tt__range_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int64_t n, nchunks;
    atomic_int team;                  // workers with an index below this take part
    atomic_int running;               // workers that have started (start_workers waits)
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int nthreads;                    // 0: not read from the environment yet
static _Thread_local bool in_loop;      // this thread runs a chunk
static _Thread_local int thread_index;  // 0 the caller, 1.. the workers

// Chunk c of a job over [0, n) in nchunks chunks.
static void run_chunk(tt__range_fn fn, void *ctx, int64_t n, int64_t nchunks, int64_t c) {
    fn(ctx, c * n / nchunks, (c + 1) * n / nchunks);
}

// Claims and runs chunks of job g until none is left; false when g has ended or was never
// this thread's to join.
static void work_on(unsigned g) {
    for (;;) {
        uint64_t s = atomic_load_explicit(&pool.claim, memory_order_acquire);
        if ((unsigned)(s >> 32) != g) return;
        tt__range_fn fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
        void *ctx = atomic_load_explicit(&pool.ctx, memory_order_relaxed);
        int64_t n = atomic_load_explicit(&pool.n, memory_order_relaxed);
        int64_t nchunks = atomic_load_explicit(&pool.nchunks, memory_order_relaxed);
        int64_t c = (int64_t)(s & 0xffffffffu);
        if (c >= nchunks) return;
        if (!atomic_compare_exchange_weak_explicit(&pool.claim, &s, s + 1,
                                                   memory_order_acq_rel, memory_order_relaxed))
            continue;
        run_chunk(fn, ctx, n, nchunks, c);
        unsigned d = atomic_fetch_add(&pool.done, 1) + 1;  // seq_cst: caller_asleep after
        if (d == (unsigned)nchunks && atomic_load(&pool.caller_asleep)) futex_wake(&pool.done);
    }
}

// A worker: waits for a job after the last one it saw (spinning spin_ns(), then asleep),
// works on it, until the pool stops.
static void *worker_main(void *arg) {
    thread_index = (int)(intptr_t)arg;
    in_loop = true;
    unsigned seen = atomic_load(&pool.job);
    atomic_fetch_add(&pool.running, 1);
    while (!atomic_load(&pool.stop)) {
        unsigned g = atomic_load_explicit(&pool.job, memory_order_acquire);
        if (g == seen) {
            int64_t t0 = now_ns(), spin = spin_ns();
            for (int i = 0; (g = atomic_load_explicit(&pool.job, memory_order_acquire)) == seen;
                 i++) {
                cpu_relax();
                if ((i & 63) == 63 && now_ns() - t0 > spin) break;
            }
        }
        if (g == seen) {
            atomic_fetch_add(&pool.sleepers, 1);
            if (atomic_load(&pool.job) == seen && !atomic_load(&pool.stop))
                futex_wait(&pool.job, seen);
            atomic_fetch_sub(&pool.sleepers, 1);
            continue;
        }
        seen = g;
        if (thread_index < atomic_load_explicit(&pool.team, memory_order_relaxed)) work_on(g);
    }
    return NULL;
}

// Stops and joins every worker (the lock held).
static void stop_workers(void) {
    atomic_store(&pool.stop, true);
    atomic_fetch_add(&pool.job, 1);
    futex_wake(&pool.job);
    for (int i = 0; i < pool.nworkers; i++) pthread_join(pool.workers[i], NULL);
    pool.nworkers = 0;
    atomic_store(&pool.running, 0);
    atomic_store(&pool.stop, false);
}

static void after_fork_child(void);

// Starts workers up to nthreads - 1 (the lock held); fewer if the OS refuses threads.
static void start_workers(int want) {
    static bool atfork;
    if (!atfork) atfork = pthread_atfork(NULL, NULL, after_fork_child) == 0;
    while (pool.nworkers < want) {
        int i = pool.nworkers;
        if (pthread_create(&pool.workers[i], NULL, worker_main, (void *)(intptr_t)(i + 1)) != 0)
            break;
        pool.nworkers++;
    }
    // Until each has started: a thread still starting (the C library or a sanitizer setting it
    // up, under their locks) when the process forks would leave those locks held in the child.
    while (atomic_load(&pool.running) < pool.nworkers) sched_yield();
}

// Waits until the job's nchunks chunks are done: spins spin_ns(), then sleeps (which frees this
// core for a worker the OS had parked behind another process).
static void wait_done(unsigned nchunks) {
    int64_t t0 = now_ns(), spin = spin_ns();
    for (int i = 0; atomic_load_explicit(&pool.done, memory_order_acquire) != nchunks; i++) {
        cpu_relax();
        if ((i & 63) != 63 || now_ns() - t0 < spin) continue;
        atomic_store(&pool.caller_asleep, 1);
        unsigned d;
        while ((d = atomic_load(&pool.done)) != nchunks)
            futex_wait(&pool.done, d);
        atomic_store(&pool.caller_asleep, 0);
        return;
    }
}

// Publishes the job and works on it with the workers (the lock held).
static void run_job(int64_t n, int64_t nchunks, tt__range_fn fn, void *ctx, int threads) {
    if (pool.nworkers != threads - 1) {
        if (pool.nworkers > threads - 1) stop_workers();
        start_workers(threads - 1);
    }
    // Close the claim word to the last job before its fields change: a thread still in
    // work_on for that job may have read its claim (all chunks taken) and then this job's
    // chunk count; its compare-and-swap must fail, or it would run a chunk of this job twice.
    unsigned g = atomic_load(&pool.job) + 1;
    atomic_store(&pool.claim, ((uint64_t)g << 32) | 0xffffffffu);
    atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&pool.n, n, memory_order_relaxed);
    atomic_store_explicit(&pool.nchunks, nchunks, memory_order_relaxed);
    atomic_store_explicit(&pool.team, (int)(nchunks < threads ? nchunks : threads),
                          memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.claim, (uint64_t)g << 32, memory_order_release);
    atomic_store(&pool.job, g);
    if (atomic_load(&pool.sleepers) > 0) futex_wake(&pool.job);
    in_loop = true;
    thread_index = 0;
    work_on(g);
    in_loop = false;
    wait_done((unsigned)nchunks);
}

// ---- parallel loops ----

void tt__parallel_chunks(int64_t n, int64_t nchunks, tt__range_fn fn, void *ctx) {
    TT_CHECK(n >= 0 && nchunks >= 1 && nchunks <= 0x7fffffff,
             "parallel loop of %lld iterations in %lld chunks", (long long)n,
             (long long)nchunks);
    int threads = tt__kernel_threads();
    if (n == 0) return;
    if (threads <= 1 || nchunks <= 1 || pthread_mutex_trylock(&pool.lock) != 0) {
        bool was = in_loop;
        in_loop = true;  // nested loops inside run serially
        for (int64_t c = 0; c < nchunks; c++) run_chunk(fn, ctx, n, nchunks, c);
        in_loop = was;
        return;
    }
    run_job(n, nchunks, fn, ctx, threads);
    pthread_mutex_unlock(&pool.lock);
}

void tt__parallel_for(int64_t n, int64_t grain, tt__range_fn fn, void *ctx) {
    TT_CHECK(grain >= 1, "parallel loop grain %lld < 1", (long long)grain);
    int threads = tt__kernel_threads();
    int64_t nchunks = (n + grain - 1) / grain, most = (int64_t)threads * CHUNKS_PER_THREAD;
    if (threads <= 1 || nchunks <= 1) {
        if (n > 0) {
            bool was = in_loop;
            in_loop = true;
            fn(ctx, 0, n);
            in_loop = was;
        }
        return;
    }
    tt__parallel_chunks(n, nchunks < most ? nchunks : most, fn, ctx);
}

void tt__parallel_shares(int64_t n, tt__range_fn fn, void *ctx) {
    int64_t threads = tt__kernel_threads();
    if (n > 0) tt__parallel_chunks(n, n < threads ? n : threads, fn, ctx);
}

// In a child forked while workers ran, the pool has none (they stay in the parent).
static void after_fork_child(void) {
    pool.nworkers = 0;
    atomic_store(&pool.running, 0);
    pthread_mutex_init(&pool.lock, NULL);
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.caller_asleep, 0);
}

int tt__thread_index(void) {
    return thread_index;
}

// ---- thread count ----

// The count from TT_NUM_THREADS, else OMP_NUM_THREADS (its first entry), else the CPUs this
// process may run on.
static int default_threads(void) {
    const char *names[] = {"TT_NUM_THREADS", "OMP_NUM_THREADS"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        int k = v ? atoi(v) : 0;
        if (k >= 1) return k < MAX_THREADS ? k : MAX_THREADS;
    }
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1)
        return CPU_COUNT(&set) < MAX_THREADS ? CPU_COUNT(&set) : MAX_THREADS;
#endif
    long k = sysconf(_SC_NPROCESSORS_ONLN);
    return k < 1 ? 1 : k < MAX_THREADS ? (int)k : MAX_THREADS;
}

void tt_set_num_threads(int n) {
    TT_CHECK(n >= 1, "the thread count must be at least 1, got %d (1 runs every kernel on the "
             "calling thread)", n);
    __atomic_store_n(&nthreads, n < MAX_THREADS ? n : MAX_THREADS, __ATOMIC_RELAXED);
}

int tt_get_num_threads(void) {
    int n = __atomic_load_n(&nthreads, __ATOMIC_RELAXED);
    if (n == 0) {
        n = default_threads();
        int zero = 0;
        if (!__atomic_compare_exchange_n(&nthreads, &zero, n, false, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED))
            n = zero;
    }
    return n;
}

int tt__kernel_threads(void) {
    return in_loop ? 1 : tt_get_num_threads();
}
