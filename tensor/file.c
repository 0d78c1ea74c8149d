// Crash-safe file writing shared by every saver (checkpoints, safetensors, BPE vocabularies):
// a temp file next to the target, filled, fsynced, renamed over the target, the directory
// fsynced; a failure at any step removes the temp file and leaves the old file as it was.
#include "tensor_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

// Removes the temp files "<name>.tmp.<pid>" next to path that savers killed mid-write left
// behind: those whose process no longer exists (so never a live saver's on this machine).
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
        if (!*digits || *end || errno || pid <= 0 || pid == (long)getpid() || pid > 1L << 30)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to know
        char full[4400];
        if (snprintf(full, sizeof full, "%s/%s", dir, n) < (int)sizeof full) unlink(full);
    }
    closedir(d);
}

tt_status tt__write_atomic(const char *path, const char *what, bool (*fill)(int fd, void *ctx),
                           void *ctx) {
    size_t plen = strlen(path) + 32;
    char *tmp = TT_MALLOC(plen);
    snprintf(tmp, plen, "%s.tmp.%ld", path, (long)getpid());
    const char *step = "create";
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
    bool ok = fd >= 0;
    if (ok) {
        step = "write";
        ok = fill(fd, ctx);
        if (ok) {
            step = "fsync";
            ok = fsync(fd) == 0;
        }
        if (!ok) err = errno;
        if (close(fd) != 0 && ok) {
            step = "close";
            ok = false;
            err = errno;
        }
        if (ok) {
            step = "rename";
            ok = rename(tmp, path) == 0;
            if (!ok) err = errno;
        }
        if (!ok) unlink(tmp);
    } else {
        err = errno;
    }
    tt_status s = TT_OK;
    if (!ok) {
        s = tt_set_error(TT_ERR_IO, "cannot save %s '%s' (%s of '%s' failed): %s; the previous "
                         "file is unchanged", what, path, step, tmp, strerror(err));
    } else {
        // Make the rename itself durable. Some filesystems cannot fsync a directory (EINVAL).
        char dir[4096];
        dir_of(path, dir, sizeof dir);
        int dfd = open(dir, O_RDONLY);
        if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)) {
            s = tt_set_error(TT_ERR_IO, "saved %s '%s' but could not sync its directory '%s': "
                             "%s", what, path, dir, strerror(errno));
        }
        if (dfd >= 0) close(dfd);
        remove_stale_temps(path, dir);
    }
    tt_free(tmp);
    return s;
}
