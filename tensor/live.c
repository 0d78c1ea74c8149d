// What is alive, and what was misused: the live-tensor report (tt_live_report, TT_LEAK_REPORT),
// scopes left open, the messages of a use after free and a double release, and the call sites
// recorded under the debug switch (TT_DEBUG=origin), resolved to file:line by addr2line.
// Not here: the quarantine and the slabs the report walks (tensor.c).
#define _GNU_SOURCE  // dladdr
#include "tensor_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <execinfo.h>
#endif

// ---- the debug switch and call sites ----

_Atomic bool tt__debug_origin;

struct tt_tensor_debug {
    tt__trace made, freed;
};

void tt_set_debug_origin(bool on) { tt__debug_origin = on; }

void tt__trace_capture(tt__trace *tr) {
#if defined(__GLIBC__)
    tr->n = backtrace(tr->pc, TT__TRACE_MAX);
#else
    tr->n = 0;
#endif
}

void tt__debug_made(tt_tensor *t) {
    if (!t->debug) t->debug = TT_CALLOC(1, sizeof *t->debug);
    tt__trace_capture(&t->debug->made);
    t->debug->freed.n = 0;
}

void tt__debug_freed(tt_tensor *t) { tt__trace_capture(&t->debug->freed); }

void tt__debug_drop(tt_tensor *t) {
    tt_free(t->debug);
    t->debug = NULL;
}

// The object holding pc and the address addr2line wants for it (an offset in a PIE or
// shared object, the address itself in a fixed-address executable). False if unknown.
static bool frame_object(void *pc, const char **file, uintptr_t *addr) {
    Dl_info info;
    if (!dladdr(pc, &info) || !info.dli_fbase) return false;
    uint16_t type;  // e_type: at byte 16 of the ELF header, 32-bit or 64-bit
    memcpy(&type, (const char *)info.dli_fbase + 16, sizeof type);
    bool pie = type == ET_DYN;
    *addr = (uintptr_t)pc - (pie ? (uintptr_t)info.dli_fbase : 0);
    *file = info.dli_fname && info.dli_fname[0] ? info.dli_fname : "/proc/self/exe";
    return !strchr(*file, '\'');
}

#define SITE_LEN 512

// Resolves frames [0, n) of tr into "file:line (function)" lines; a frame addr2line cannot
// place keeps "object+0xoffset". Frames of one object go to one addr2line.
static void resolve(const tt__trace *tr, char (*out)[SITE_LEN]) {
    for (int i = 0; i < tr->n; i++) snprintf(out[i], SITE_LEN, "%p", tr->pc[i]);
    for (int i = 0; i < tr->n;) {
        const char *file, *fj;
        uintptr_t a;
        // pc - 1: the call instruction, not the one after it
        if (!frame_object((char *)tr->pc[i] - 1, &file, &a)) {
            i++;
            continue;
        }
        char cmd[4096];
        int k = snprintf(cmd, sizeof cmd, "addr2line -f -e '%s'", file), j = i;
        for (; j < tr->n && k < (int)sizeof cmd - 40; j++) {
            if (!frame_object((char *)tr->pc[j] - 1, &fj, &a) || strcmp(fj, file)) break;
            snprintf(out[j], SITE_LEN, "%s+0x%lx", file, (unsigned long)a);
            k += snprintf(cmd + k, sizeof cmd - (size_t)k, " 0x%lx", (unsigned long)a);
        }
        snprintf(cmd + k, sizeof cmd - (size_t)k, " 2>/dev/null");
        FILE *p = popen(cmd, "r");
        char fn[100], loc[400];
        for (int m = i; p && m < j && fgets(fn, sizeof fn, p) && fgets(loc, sizeof loc, p); m++) {
            fn[strcspn(fn, "\n")] = 0;
            loc[strcspn(loc, " \n")] = 0;  // drops " (discriminator N)"
            if (loc[0] != '?') snprintf(out[m], SITE_LEN, "%s (%s)", loc, fn);
        }
        if (p) pclose(p);
        i = j;
    }
}

// Is the resolved frame in the library's sources? root is the library's source root, taken
// from frame 0 (tt__trace_capture, in tensor/live.c).
static bool library_frame(const char *site, const char *root, size_t nroot) {
    static const char *dirs[] = {"tensor/", "autograd/", "nn/", "optim/", "io/", "compress/",
                                 "data/", "train/", "dist/", "models/"};
    if (nroot == 0 || strncmp(site, root, nroot) != 0) return strncmp(site, "tt_", 3) == 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (strncmp(site + nroot, dirs[i], strlen(dirs[i])) == 0) return true;
    return false;
}

// Writes into buf the first `depth` frames of tr outside the library, " < " between them,
// e.g. "tests/test_leaks.c:42 (leak_one) < tests/test_leaks.c:90 (main)".
static const char *site_str(const tt__trace *tr, int depth, char *buf, size_t nbuf) {
    char (*lines)[SITE_LEN] = TT_MALLOC(TT__TRACE_MAX * sizeof *lines);
    resolve(tr, lines);
    char cwd[1024] = "";
    if (getcwd(cwd, sizeof cwd - 1)) strcat(cwd, "/");  // else "": nothing is shortened
    // The first frame in live.c (tt__trace_capture; under ASan its backtrace interceptor
    // comes first) gives the library's source root.
    int first = 0;
    while (first < tr->n && !strstr(lines[first], "tensor/live.c:")) first++;
    const char *root = first < tr->n ? lines[first] : "";
    size_t nroot = first < tr->n ? (size_t)(strstr(root, "tensor/live.c:") - root) : 0;
    size_t k = 0, ncwd = strlen(cwd);
    buf[0] = 0;
    int shown = 0;
    for (int i = first < tr->n ? first + 1 : 1; i < tr->n && shown < depth && k < nbuf; i++) {
        if (shown == 0 && library_frame(lines[i], root, nroot)) continue;
        const char *s = strncmp(lines[i], cwd, ncwd) == 0 ? lines[i] + ncwd : lines[i];
        k += (size_t)snprintf(buf + k, nbuf - k, "%s%s", shown++ ? " < " : "", s);
        if (strstr(s, " (main)")) break;  // what calls main is the C library
    }
    if (!shown) snprintf(buf, nbuf, "an unknown place");
    tt_free(lines);
    return buf;
}

// ---- naming a tensor ----

// "(2, 3) f32 made by matmul", with its name when it has one.
static const char *describe(const tt_tensor *t, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s %s made by %s", tt__shape(t), tt_dtype_name(t->dtype),
                     t->origin ? t->origin : "an unknown function");
    if (t->name && k >= 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, " \"%s\"", t->name);
    return buf;
}

// " (made at ...; released at ...)" under the debug switch, else a hint to turn it on.
static const char *where(const tt_tensor *t, char *buf, size_t n) {
    if (!t->debug) {
        snprintf(buf, n, " (TT_DEBUG=origin in the environment names where it was made and "
                 "released)");
        return buf;
    }
    char made[600], freed[600];
    site_str(&t->debug->made, 2, made, sizeof made);
    if (t->debug->freed.n)
        site_str(&t->debug->freed, 2, freed, sizeof freed);
    snprintf(buf, n, " (made at %s; released at %s)", made,
             t->debug->freed.n ? freed : "an unknown place");
    return buf;
}

void tt__bad_refcount(const tt_tensor *t, const char *func, bool retain) {
    char d[256], w[1400];
    if (t->refcount == TT__FREED)
        tt_fatal(__FILE__, __LINE__, func, "tensor %s was already freed: %s (inside a scope, "
                 "the scope owns what ops return: do not release it, or tt_keep it first)%s",
                 describe(t, d, sizeof d),
                 retain ? "retain after free"
                        : "released more often than retained (a double release)",
                 where(t, w, sizeof w));
    tt_fatal(__FILE__, __LINE__, func, "refcount underflow (%lld) on tensor %s %s: released more "
             "often than retained, or not a tensor", (long long)t->refcount, tt__shape(t),
             tt_dtype_name(t->dtype));
}

void tt__freed(const tt_tensor *t, const char *func) {
    char d[256], w[1400];
    if (__atomic_load_n(&t->refcount, __ATOMIC_RELAXED) == TT__FREED)
        tt_fatal(__FILE__, __LINE__, func, "tensor %s was used after it was freed: made "
                 "inside a scope that has ended? tt_keep it (or it was released: hold a "
                 "reference with tt_retain while you use it)%s", describe(t, d, sizeof d),
                 where(t, w, sizeof w));
    tt_fatal(__FILE__, __LINE__, func, "tensor %s %s has no storage: not a tensor, or freed "
             "long ago (made inside a scope that has ended? tt_keep it)", tt__shape(t),
             tt_dtype_name(t->dtype));
}

// ---- the live-tensor list ----

typedef struct entry {
    const tt_tensor *t;
    int scope;     // the open scope (0 outermost) that owns or keeps it, -1 none
    int64_t count;  // tensors in its group (on the group's first entry)
} entry;

typedef struct entries {
    entry *e;
    size_t n, cap;
} entries;

static void collect(const tt_tensor *t, void *ctx) {
    entries *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->e = TT_REALLOC(l->e, l->cap * sizeof *l->e);
    }
    l->e[l->n++] = (entry){t, -1, 1};
}

static int by_pointer(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const entry *)a)->t, y = (uintptr_t)((const entry *)b)->t;
    return (x > y) - (x < y);
}

static void mark_scope(entries *l, tt_tensor *const *ts, size_t n, int depth) {
    for (size_t i = 0; i < n; i++) {
        entry key = {ts[i], 0, 0};
        entry *e = bsearch(&key, l->e, l->n, sizeof *l->e, by_pointer);
        if (e) e->scope = depth;
    }
}

static size_t own_bytes(const tt_tensor *t) {
    return (size_t)tt__shape_numel(t->ndim, t->shape) * tt_dtype_size(t->dtype);
}

static size_t held_bytes(const tt_tensor *t) { return t->storage ? t->storage->nbytes : 0; }

// A total order on where tensors were made (none first).
static int trace_cmp(const tt_tensor *a, const tt_tensor *b) {
    int na = a->debug ? a->debug->made.n : 0, nb = b->debug ? b->debug->made.n : 0;
    if (na != nb) return na < nb ? -1 : 1;
    return na ? memcmp(a->debug->made.pc, b->debug->made.pc, sizeof(void *) * (size_t)na) : 0;
}

// Entries in one group print as one line.
static int group_cmp(const entry *x, const entry *y) {
    const tt_tensor *a = x->t, *b = y->t;
    if (held_bytes(a) != held_bytes(b)) return held_bytes(a) > held_bytes(b) ? -1 : 1;
    if (a->dtype != b->dtype) return a->dtype < b->dtype ? -1 : 1;
    if (a->ndim != b->ndim) return a->ndim < b->ndim ? -1 : 1;
    int c = memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
    if (c) return c;
    c = strcmp(a->origin ? a->origin : "", b->origin ? b->origin : "");
    if (c) return c;
    if (x->scope != y->scope) return x->scope < y->scope ? -1 : 1;
    c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
    if (c) return c;
    return trace_cmp(a, b);
}

static int group_order(const void *a, const void *b) { return group_cmp(a, b); }

// Biggest first: a group's storage bytes times its count.
static int by_total(const void *a, const void *b) {
    const entry *x = a, *y = b;
    double tx = (double)held_bytes(x->t) * (double)x->count;
    double ty = (double)held_bytes(y->t) * (double)y->count;
    return (tx < ty) - (tx > ty);
}

// "12 bytes", "4.1 kB", "188 MB", "2.5 GB".
static const char *human(size_t b, char *buf, size_t n) {
    double x = (double)b;
    if (b < 1000) snprintf(buf, n, "%zu bytes", b);
    else if (x < 1e6) snprintf(buf, n, "%.1f kB", x / 1e3);
    else if (x < 1e8) snprintf(buf, n, "%.1f MB", x / 1e6);
    else if (x < 1e9) snprintf(buf, n, "%.0f MB", x / 1e6);
    else snprintf(buf, n, "%.1f GB", x / 1e9);
    return buf;
}

// One group's line: "  2 x (2, 3) f32 made by matmul, 24 bytes each[, owned by ...]".
static void print_group(FILE *f, const entry *g) {
    const tt_tensor *t = g->t;
    char d[256], h[32], h2[32];
    fprintf(f, "  %lld x %s", (long long)g->count, describe(t, d, sizeof d));
    const tt_storage *s = t->storage;
    if (s && s->nbytes > own_bytes(t)) {
        tt_tensor base = {.ndim = s->ndim, .dtype = t->dtype};
        memcpy(base.shape, s->shape, sizeof base.shape);
        fprintf(f, ": a %lld-element view keeping a %s %s tensor of %s alive",
                (long long)tt__shape_numel(t->ndim, t->shape), tt__shape(&base),
                tt_dtype_name(t->dtype), human(s->nbytes, h, sizeof h));
    } else {
        fprintf(f, ", %s%s", human(held_bytes(t), h2, sizeof h2), g->count > 1 ? " each" : "");
    }
    if (g->scope >= 0) fprintf(f, ", owned by the open scope at depth %d", g->scope + 1);
    if (t->debug) {
        char site[600];
        fprintf(f, "\n      made at %s", site_str(&t->debug->made, 3, site, sizeof site));
    }
    fputc('\n', f);
}

#define REPORT_GROUPS 20  // lines printed at most; the rest are summed up

// Collects every live tensor, marks those this thread's open scopes hold, groups them.
// Returns the number of groups (their first entries at the front, with their counts).
static size_t live_groups(entries *l, int64_t *scoped) {
    tt__tensors_each(collect, l);
    *scoped = 0;
    if (l->n == 0) return 0;  // (qsort and bsearch take no NULL array)
    qsort(l->e, l->n, sizeof *l->e, by_pointer);
    for (int i = 0; i < tt_scope_depth(); i++) {
        tt__scope_view v = tt__scope_get(i);
        mark_scope(l, v.owned, v.n, i);
        mark_scope(l, v.kept, v.nkept, i);
    }
    for (size_t i = 0; i < l->n; i++) *scoped += l->e[i].scope >= 0;
    qsort(l->e, l->n, sizeof *l->e, group_order);
    size_t ng = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (ng && group_cmp(&l->e[ng - 1], &l->e[i]) == 0) l->e[ng - 1].count++;
        else l->e[ng++] = l->e[i];
    }
    qsort(l->e, ng, sizeof *l->e, by_total);
    return ng;
}

static void print_groups(FILE *f, const entries *l, size_t ng) {
    int64_t rest = 0;
    for (size_t i = 0; i < ng; i++) {
        if (i < REPORT_GROUPS) print_group(f, &l->e[i]);
        else rest += l->e[i].count;
    }
    if (ng > REPORT_GROUPS)
        fprintf(f, "  ... and %lld more tensors in %zu more groups\n", (long long)rest,
                ng - REPORT_GROUPS);
}

int64_t tt_live_report(FILE *f) {
    entries l = {0};
    int64_t scoped;
    size_t ng = live_groups(&l, &scoped);
    char h[32];
    fprintf(f, "tinytorch: %zu live tensors, %s of storage\n", l.n,
            human((size_t)tt_live_bytes(), h, sizeof h));
    print_groups(f, &l, ng);
    int64_t n = (int64_t)l.n;
    tt_free(l.e);
    return n;
}

// ---- at exit: what is still live, and the scopes never ended ----

// "  the scope at depth 2 (owning 150 tensors) opened at x.c:10 (main) never ended".
static void print_scopes(FILE *f) {
    int depth = tt_scope_depth();
    if (depth == 0) return;
    fprintf(f, "tinytorch: %d scope%s still open at exit (a tt_scope_begin without its "
            "tt_scope_end: a loop left by break, continue or return?):\n", depth,
            depth > 1 ? "s" : "");
    int shown = 0;
    for (int i = depth - 1; i >= 0; i--) {
        tt__scope_view v = tt__scope_get(i);
        if (shown == 8 && i > 0) {  // the innermost few, then the outermost
            fprintf(f, "  ... %d more\n", i);
            i = 0;
            v = tt__scope_get(0);
        }
        char site[600];
        fprintf(f, "  the scope at depth %d (owning %zu tensor%s) opened at %s never ended\n",
                i + 1, v.n + v.nkept, v.n + v.nkept == 1 ? "" : "s",
                v.begun ? site_str(v.begun, 3, site, sizeof site)
                        : "? (TT_DEBUG=origin in the environment says where)");
        shown++;
    }
}

int64_t tt_leak_report(FILE *f) {
    entries l = {0};
    int64_t scoped;
    size_t ng = live_groups(&l, &scoped);
    int64_t n = (int64_t)l.n;
    if (n != 0) {
        fprintf(f, "tinytorch: %lld tensors (%lld bytes of storage) still live at exit:",
                (long long)n, (long long)tt_live_bytes());
        if (n > scoped)
            fprintf(f, " %lld made outside any scope %s never released (call tt_release on "
                    "each, or make it inside tt_scope_begin()/tt_scope_end())%s",
                    (long long)(n - scoped), n - scoped > 1 ? "were" : "was",
                    scoped ? ";" : "");
        if (scoped)
            fprintf(f, " %lld owned by scopes never ended (listed below)", (long long)scoped);
        fputc('\n', f);
        print_groups(f, &l, ng);
    }
    print_scopes(f);
    tt_free(l.e);
    return n;
}

static void leak_report_at_exit(void) {
    const char *env = getenv("TT_LEAK_REPORT");
    if (env && env[0] && strcmp(env, "0") != 0) tt_leak_report(stderr);
}

void tt__leak_report_arm(void) {
    const char *leak = getenv("TT_LEAK_REPORT"), *debug = getenv("TT_DEBUG");
    if ((leak && atoi(leak) >= 2) || (debug && strstr(debug, "origin"))) tt__debug_origin = true;
    atexit(leak_report_at_exit);
}

void tt__scope_deep(int depth) {
    static atomic_bool warned;
    if (atomic_exchange(&warned, true)) return;
    char site[600];
    tt__scope_view v = tt__scope_get(depth - 2);
    fprintf(stderr, "tinytorch: warning: %d scopes open on this thread: the scope opened at %s "
            "never ended? (a tt_scope_begin in a loop without its tt_scope_end)\n", depth,
            v.begun ? site_str(v.begun, 3, site, sizeof site)
                    : "? (TT_DEBUG=origin in the environment says where)");
}
