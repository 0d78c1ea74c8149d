// Crash-safe file writing shared by every saver (checkpoints, safetensors, BPE vocabularies):
// a temp file next to the target, filled, fsynced, renamed over the target, the directory
// fsynced; a failure at any step removes the temp file and leaves the old file as it was.
// Also the checks every reader and writer shares: inputs that are regular files (never a
// FIFO to block on), outputs that replace no input, device or directory.
#define _XOPEN_SOURCE 700  // realpath
#include "tensor_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool tt__write_all(int fd, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

// The directory part of path ("." when it has none) into buf.
static void dir_of(const char *path, char *buf, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, cap, ".");
    else if (slash == path) snprintf(buf, cap, "/");
    else snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

// Removes the temp files "<name>.tmp.<pid>" and "<name>.tmp.<pid>.<suffix>" next to path that
// savers killed mid-write left behind: those whose process no longer exists (so never a live
// saver's on this machine).
static void remove_stale_temps(const char *path, const char *dir) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t nb = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        if (strncmp(n, base, nb) != 0 || strncmp(n + nb, ".tmp.", 5) != 0) continue;
        const char *digits = n + nb + 5;
        char *end;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        if (*end == '.' && strlen(end + 1) == 6 && strspn(end + 1, "0123456789abcdef") == 6)
            end += 7;  // the random suffix
        if (!*digits || *end || errno || pid <= 0 || pid == (long)getpid() || pid > 1L << 30)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to know
        char full[4400];
        if (snprintf(full, sizeof full, "%s/%s", dir, n) < (int)sizeof full) unlink(full);
    }
    closedir(d);
}

// Creates "<path>.tmp.<pid>.<suffix>" exclusively (O_EXCL | O_NOFOLLOW: a file or symlink
// planted at the name is never opened), a new suffix on each EEXIST. The fd, or -1 (errno set).
int tt__create_temp(const char *path, char **tmp_out) {
    static _Atomic unsigned long counter;
    size_t cap = strlen(path) + 64;
    char *tmp = TT_MALLOC(cap);
    TT_CHECK(tmp, "out of memory");  // TT_MALLOC aborts first; this tells the compiler
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long r = (unsigned long)ts.tv_nsec * 2654435761ul + atomic_fetch_add(&counter, 1);
        snprintf(tmp, cap, "%s.tmp.%ld.%06lx", path, (long)getpid(), r & 0xfffffful);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        tt_free(tmp);
        errno = e;
        return -1;
    }
    *tmp_out = tmp;
    return fd;
}

// The file a save to path replaces: the target of a symlink (so the link stays a link), else
// path itself; a new string.
static char *save_target(const char *path) {
    struct stat ls;
    char *real = lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) ? realpath(path, NULL) : NULL;
    size_t n = strlen(real ? real : path) + 1;
    char *t = TT_MALLOC(n);
    memcpy(t, real ? real : path, n);
    free(real);
    return t;
}

// fill, fsync, close and rename of the temp file fd over target; the step that failed, or NULL.
static const char *write_temp(int fd, const char *tmp, const char *target,
                              bool (*fill)(int fd, void *ctx), void *ctx, int *err) {
    const char *step = NULL;
    struct stat old;
    if (stat(target, &old) == 0 && S_ISREG(old.st_mode) && fchmod(fd, old.st_mode & 07777) != 0)
        step = "chmod";  // keep the mode of the file replaced
    else if (!fill(fd, ctx)) step = "write";
    else if (fsync(fd) != 0) step = "fsync";
    if (step) *err = errno;
    if (close(fd) != 0 && !step) {
        step = "close";
        *err = errno;
    }
    if (!step && rename(tmp, target) != 0) {
        step = "rename";
        *err = errno;
    }
    if (step) unlink(tmp);
    return step;
}

tt_status tt__write_atomic(const char *path, const char *what, bool (*fill)(int fd, void *ctx),
                           void *ctx) {
    char *target = save_target(path), *tmp = NULL;
    int fd = tt__create_temp(target, &tmp), err = errno;
    const char *step = fd < 0 ? "create" : write_temp(fd, tmp, target, fill, ctx, &err);
    tt_status s = TT_OK;
    if (step) {
        char pattern[4200];
        snprintf(pattern, sizeof pattern, "%s.tmp.%ld.*", target, (long)getpid());
        s = tt_set_error(TT_ERR_IO, "cannot save %s '%s' (%s of '%s' failed): %s; the previous "
                         "file is unchanged", what, path, step, tmp ? tmp : pattern,
                         strerror(err));
    } else {
        // Make the rename itself durable. Some filesystems cannot fsync a directory (EINVAL).
        char dir[4096];
        dir_of(target, dir, sizeof dir);
        int dfd = open(dir, O_RDONLY);
        if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)) {
            s = tt_set_error(TT_ERR_IO, "saved %s '%s' but could not sync its directory '%s': "
                             "%s", what, path, dir, strerror(errno));
        }
        if (dfd >= 0) close(dfd);
        remove_stale_temps(target, dir);
    }
    tt_free(tmp);
    tt_free(target);
    return s;
}

// ---- inputs: regular files only ----

// What a non-regular file is, for messages.
static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

tt_status tt_file_open_read(const char *path, const char *what, int *fd) {
    TT_CHECK(path && what && fd, "path, what and fd must be given");
    *fd = -1;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO opens without a writer
    struct stat st;
    if (f < 0 || fstat(f, &st) != 0) {
        int e = errno;
        if (f >= 0) close(f);
        return tt_set_error(TT_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return tt_set_error(TT_ERR_IO, "%s '%s' is %s, not a regular file", what, path,
                            file_kind(st.st_mode));
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return tt_set_error(TT_ERR_IO, "cannot read %s '%s': %s", what, path, strerror(e));
    }
    *fd = f;
    return TT_OK;
}

FILE *tt__fopen_read(const char *path, const char *what, const char *fix) {
    int fd;
    FILE *f = NULL;
    if (tt_file_open_read(path, what, &fd) == TT_OK && !(f = fdopen(fd, "rb"))) {
        int e = errno;
        close(fd);
        tt_set_error(TT_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    struct stat st;
    if (!f && fix && !(stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {  // the fix of a file
        char why[900];
        snprintf(why, sizeof why, "%s", tt_last_error());
        tt_set_error(TT_ERR_IO, "%s (%s)", why, fix);
    }
    return f;
}

// ---- outputs: checked before any work ----

// Who a path is: the file's device and inode when it exists, else its directory's and its
// base name (two names of one file not yet written match too). false when neither exists.
typedef struct file_id {
    dev_t dev;
    ino_t ino;
    const char *base;  // NULL: the file exists
} file_id;

static bool file_identify(const char *path, file_id *id) {
    struct stat st;
    if (stat(path, &st) == 0) {
        *id = (file_id){st.st_dev, st.st_ino, NULL};
        return true;
    }
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    if (stat(dir, &st) != 0) return false;
    *id = (file_id){st.st_dev, st.st_ino, slash ? slash + 1 : path};
    return true;
}

static bool file_same(const file_id *a, const file_id *b) {
    return a->dev == b->dev && a->ino == b->ino && !a->base == !b->base &&
           (!a->base || strcmp(a->base, b->base) == 0);
}

// One output alone: a file path, nothing but a regular file (or a character device when
// written in place), in an existing directory where a temp file can be created.
static tt_status check_output(const tt_file_role *o) {
    const char *p = o->path;
    size_t n = strlen(p);
    if (n == 0) return tt_set_error(TT_ERR_ARG, "%s is empty; pass a file path", o->name);
    if (p[n - 1] == '/')
        return tt_set_error(TT_ERR_ARG, "%s '%s' ends in '/'; pass a file path such as "
                            "%sNAME", o->name, p, p);
    struct stat st;
    if (stat(p, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return tt_set_error(TT_ERR_ARG, "%s '%s' is a directory; pass a file path such as "
                                "%s/NAME", o->name, p, p);
        if (!S_ISREG(st.st_mode) && !(o->in_place && S_ISCHR(st.st_mode)))
            return tt_set_error(TT_ERR_ARG, "%s '%s' is %s, which it would replace; pass a "
                                "regular file path", o->name, p, file_kind(st.st_mode));
        if (o->in_place) {
            if (access(p, W_OK) == 0) return TT_OK;
            return tt_set_error(TT_ERR_IO, "cannot write %s '%s': %s; pick a writable path",
                                o->name, p, strerror(errno));
        }
    } else if (errno != ENOENT) {
        return tt_set_error(TT_ERR_IO, "cannot write %s '%s': %s; pick a path whose directory "
                            "exists", o->name, p, strerror(errno));
    }
    char *target = save_target(p), *tmp = NULL;
    int fd = tt__create_temp(target, &tmp), e = errno;
    tt_free(target);
    if (fd < 0)
        return tt_set_error(TT_ERR_IO, "cannot write %s '%s': %s; pick a writable path",
                            o->name, p, strerror(e));
    close(fd);
    unlink(tmp);
    tt_free(tmp);
    return TT_OK;
}

tt_status tt_file_check_outputs(const tt_file_role *outs, int n_out, const tt_file_role *ins,
                                int n_in) {
    TT_CHECK(n_out >= 0 && n_in >= 0 && (outs || !n_out) && (ins || !n_in),
             "outs and ins must hold n_out and n_in roles");
    for (int i = 0; i < n_out; i++) {
        const tt_file_role *o = &outs[i];
        if (!o->path) continue;
        tt_status s = check_output(o);
        if (s != TT_OK) return s;
        file_id oid, id;
        if (!file_identify(o->path, &oid)) continue;
        for (int j = 0; j < n_in; j++) {
            const tt_file_role *in = &ins[j];
            if (in->path && !(in->replaceable && o->replaceable && !o->in_place) &&
                file_identify(in->path, &id) && !id.base && file_same(&oid, &id))
                return tt_set_error(TT_ERR_ARG, "%s '%s' is the same file as %s '%s', which it "
                                    "would overwrite; pick another %s", o->name, o->path,
                                    in->name, in->path, o->name);
        }
        for (int j = 0; j < i; j++) {
            if (outs[j].path && file_identify(outs[j].path, &id) && file_same(&oid, &id))
                return tt_set_error(TT_ERR_ARG, "%s '%s' is the same file as %s '%s'; pick "
                                    "another %s", o->name, o->path, outs[j].name,
                                    outs[j].path, o->name);
        }
    }
    return TT_OK;
}
