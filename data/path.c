// The data file lookup of path.h: $TINYTORCH_DATA, the install location beside the executable,
// then the source tree. It only finds files; reading them is the caller's.
#include "path.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// TT_SOURCE_DIR (set by the Makefile): the absolute path of the tree the library was built in.
#ifndef TT_SOURCE_DIR
#define TT_SOURCE_DIR ""
#endif

#define PLACE_MAX 4096

// Whether path is a regular file this process may read.
static bool readable_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, R_OK) == 0;
}

// The running executable's path into exe (PLACE_MAX bytes); false where it cannot be known.
static bool exe_path(char *exe) {
    ssize_t n = readlink("/proc/self/exe", exe, PLACE_MAX - 1);
    if (n <= 0 || n >= PLACE_MAX - 1) return false;
    exe[n] = '\0';
    return true;
}

// The install location: PREFIX/share/tinytorch for an executable in PREFIX/bin (any folder
// name: the one above the executable's). False when the executable is unknown.
static bool install_dir(char *dir) {
    char exe[PLACE_MAX];
    if (!exe_path(exe)) return false;
    for (int up = 0; up < 2; up++) {  // drop the file name, then its folder
        char *slash = strrchr(exe, '/');
        if (!slash) return false;
        *slash = '\0';
    }
    return snprintf(dir, PLACE_MAX, "%s/share/tinytorch", exe) < PLACE_MAX;
}

// Whether the running executable lies inside the source tree src.
static bool run_from_tree(const char *src) {
    char exe[PLACE_MAX];
    size_t n = strlen(src);
    return n > 0 && exe_path(exe) && strncmp(exe, src, n) == 0 && exe[n] == '/';
}

// One lookup: the name, the caller's buffer, the places looked at so far (for the message).
typedef struct lookup {
    const char *name;
    char *buf;
    size_t size;
    char seen[PLACE_MAX * 3];
    tt_status st;
} lookup;

// Adds a place to the list of places looked at.
static void note_place(lookup *l, const char *fmt, const char *path, const char *what) {
    size_t used = strlen(l->seen);
    if (used) snprintf(l->seen + used, sizeof l->seen - used, ", ");
    used = strlen(l->seen);
    snprintf(l->seen + used, sizeof l->seen - used, fmt, path, what);
}

// Tries dir/name (what: the place's role): true when the lookup is over, found (l->buf holds
// the path) or failed (l->st); false to go on, the place noted.
static bool try_place(lookup *l, const char *dir, const char *what) {
    int n = snprintf(l->buf, l->size, "%s/%s", dir, l->name);
    if (n < 0 || (size_t)n >= l->size) {
        l->st = tt_set_error(TT_ERR_ARG, "tt_data_path: %s/%s is longer than the %zu bytes "
                             "given", dir, l->name, l->size);
        return true;
    }
    if (readable_file(l->buf)) return true;
    note_place(l, "%s (%s)", l->buf, what);
    return false;
}

tt_status tt_data_path(const char *name, char *buf, size_t size) {
    TT_CHECK(name && buf && size > 0, "name and buf (size > 0) must be given");
    if (!name[0] || name[0] == '/')
        return tt_set_error(TT_ERR_ARG, "tt_data_path: '%s' is not a relative file name", name);
    lookup l = {.name = name, .buf = buf, .size = size, .seen = "", .st = TT_OK};
    char dir[PLACE_MAX];
    const char *env = getenv(TT_DATA_ENV);
    if (env && env[0]) {
        if (try_place(&l, env, "$" TT_DATA_ENV)) return l.st;
    } else {
        note_place(&l, "%s (%s)", "$" TT_DATA_ENV, "not set");
    }
    if (install_dir(dir) && try_place(&l, dir, "the install location")) return l.st;
    if (TT_SOURCE_DIR[0]) {
        snprintf(dir, sizeof dir, "%s/data", TT_SOURCE_DIR);
        if (run_from_tree(TT_SOURCE_DIR)) {
            if (try_place(&l, dir, "the source tree")) return l.st;
        } else {
            note_place(&l, "not %s (%s)", dir, "the source tree: this program runs outside it");
        }
    }
    buf[0] = '\0';
    return tt_set_error(TT_ERR_IO, "data file '%s' not found: looked in %s; run `make install` "
                        "(or `make data` in the source tree), or set " TT_DATA_ENV " to a "
                        "folder that holds %s", name, l.seen, name);
}

// ---- lists of paths ----

tt_status tt_path_list_add(tt_path_list *l, const char *a, const char *b) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) return tt_set_error(TT_ERR_NOMEM, "out of memory listing files");
        l->v = nv;
        l->cap = cap;
    }
    size_t len = strlen(a) + 1 + (b ? strlen(b) : 0) + 1;
    if (!(l->v[l->n] = malloc(len)))
        return tt_set_error(TT_ERR_NOMEM, "out of memory listing files");
    snprintf(l->v[l->n++], len, b ? "%s/%s" : "%s", a, b);
    return TT_OK;
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

tt_status tt_path_list_dir(tt_path_list *l, const char *dir, bool (*keep)(const char *name)) {
    DIR *d = opendir(dir);
    if (!d) return tt_set_error(TT_ERR_IO, "cannot open directory '%s': %s", dir, strerror(errno));
    size_t first = l->n;
    tt_status s = TT_OK;
    for (struct dirent *e; s == TT_OK && (e = readdir(d));) {
        if (e->d_name[0] == '.' || (keep && !keep(e->d_name))) continue;
        size_t len = strlen(dir) + 1 + strlen(e->d_name) + 1;
        char *path = malloc(len);
        if (!path) {
            s = tt_set_error(TT_ERR_NOMEM, "out of memory listing files");
            break;
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) s = tt_path_list_add(l, path, NULL);
        free(path);
    }
    closedir(d);
    if (s == TT_OK && l->n > first) qsort(l->v + first, l->n - first, sizeof *l->v, cmp_path);
    return s;
}

void tt_path_list_free(tt_path_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}
