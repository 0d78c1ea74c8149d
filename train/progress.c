// tinytorch.c train: the progress on stderr, a bar redrawn in place on a terminal and a line
// every 50 steps otherwise. It does not print anything else.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "train_internal.h"

double tt__train_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// "--" for an unknown or absurd time, else "1h02m", "3m05s" or "42s".
static void fmt_eta(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 359999) snprintf(buf, n, "--");
    else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%.0fs", s);
}

// Columns of the terminal on stderr: its size, else $COLUMNS, else 80.
static int term_cols(void) {
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    const char *e = getenv("COLUMNS");
    int c = e ? atoi(e) : 0;
    return c > 0 ? c : 80;
}

// The bar line in at most cols - 1 columns (a line as wide as the terminal wraps on some):
// the longest of these texts that fits, after a bar of 10 to 24 columns when there is room.
static void progress_format(char *out, size_t n, int cols, int64_t step, int64_t iters,
                            double loss, double ms, double tok_s, const char *eta) {
    char texts[4][160];
    snprintf(texts[0], sizeof texts[0], " %lld/%lld loss %.4f | %.1f ms/step | %.0f tok/s | "
             "ETA %s", (long long)step, (long long)iters, loss, ms, tok_s, eta);
    snprintf(texts[1], sizeof texts[1], " %lld/%lld loss %.4f | %.1f ms/step | ETA %s",
             (long long)step, (long long)iters, loss, ms, eta);
    snprintf(texts[2], sizeof texts[2], " %lld/%lld loss %.4f | ETA %s", (long long)step,
             (long long)iters, loss, eta);
    snprintf(texts[3], sizeof texts[3], "%lld/%lld loss %.4f", (long long)step,
             (long long)iters, loss);
    int room = cols - 1;
    for (int i = 0; i < 4; i++) {
        int len = (int)strlen(texts[i]), width = room - len - 2;
        if (width > 24) width = 24;
        if (width >= 10) {
            char bar[32];
            int done = (int)((double)width * (double)step / (double)iters);
            for (int k = 0; k < width; k++) bar[k] = k < done ? '=' : (k == done ? '>' : ' ');
            bar[width] = 0;
            snprintf(out, n, "[%s]%s", bar, texts[i]);
            return;
        }
        if (len <= room || i == 3) {
            const char *t = texts[i][0] == ' ' ? texts[i] + 1 : texts[i];
            snprintf(out, n, "%.*s", room > 0 ? room : 0, t);
            return;
        }
    }
}

void tt__progress_step(tt_trainer *tr, double ms, double tok_s) {
    int64_t step = tr->step, iters = tr->opts.iters;
    char eta[32];
    fmt_eta(eta, sizeof eta, (double)(iters - step) * ms / 1000.0);
    if (tr->tty) {
        double t = tt__train_now();
        if (step != iters && t - tr->last_draw < 0.1) return;
        tr->last_draw = t;
        char line[256];
        progress_format(line, sizeof line, term_cols(), step, iters, tr->loss, ms, tok_s, eta);
        fprintf(stderr, "\r\033[K%s", line);
        tr->drawn = true;
    } else if (step == 1 || step % 50 == 0 || step == iters) {
        fprintf(stderr, "step %lld/%lld: loss %.4f, %.1f ms/step, %.0f tok/s, ETA %s\n",
                (long long)step, (long long)iters, tr->loss, ms, tok_s, eta);
    }
    fflush(stderr);
}

void tt_trainer_clear_progress(tt_trainer *tr) {
    if (tr->drawn) fputs("\r\033[K", stderr);
    tr->drawn = false;
}
