// Data-parallel training-step benchmark of the GPT (dist/): each rank runs ACCUM micro-batches of
// the baby or mid config (forward, backward), then the gradient all-reduce, clip and AdamW, as
// `char_gpt train --grad-accum ACCUM` does under mpirun. Random tokens: no corpus needed.
// Rank 0 prints one `bench dist ...` line; never part of `make test`. `make bench MPI=1` runs
//
//   mpirun -np 2 bench_dist baby 1 1    2 ranks x 1 thread, 1 micro-batch each
//   mpirun -np 1 bench_dist baby 2 2    1 rank x 2 threads, 2 micro-batches: the same global batch
//
// and reports the median step, the tokens/s of the global batch, the median time of the
// gradients' all-reduce per step with its share of the step, and before it the median wait for
// the slowest rank (a one-number all-reduce), so that the all-reduce times communication alone.
// A fourth argument `overlap` starts the all-reduce during the last micro-batch's backward
// (tt_dist_overlap_begin/end; `blocking`, the default, after it); `alternate` takes turns step
// by step and prints a line for each (on a loaded machine, the fair comparison); a fifth sets
// the bucket size in elements. Overlapped, allreduce_ms is what the all-reduce adds to the
// backward and after it (announcements, packing, the wait in tt_dist_overlap_end, which then
// includes the wait for the slowest rank: no sync is taken), so ms_per_step is the figure to
// compare.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "dist/dist.h"
#include "models/gpt/gpt.h"

typedef struct bench_config {
    const char *name;
    int64_t n_layer, n_head, n_embd, block, batch, vocab;
    int steps;  // timed steps
} bench_config;

// bench_train's configs (bench/bench_train.c).
static const bench_config configs[] = {
    {"baby", 4, 4, 128, 64, 12, 65, 30},
    {"mid", 6, 6, 384, 256, 8, 65, 6},
};

static void fail(const char *what) {
    if (tt_dist_rank() == 0) fprintf(stderr, "bench_dist: %s\n", what);
    tt_dist_abort(1);
    tt_dist_finalize();
    exit(1);
}

static tt_tensor *random_tokens(tt_rng *rng, const bench_config *bc) {
    tt_tensor *t = tt_empty(TT_I32, TT_SHAPE(bc->batch, bc->block));  // (B, T)
    int32_t *p = tt_data(t);
    for (int64_t i = 0; i < bc->batch * bc->block; i++)
        p[i] = (int32_t)tt_rng_below(rng, bc->vocab);
    return t;
}

int main(int argc, char **argv) {
    if (tt_dist_init(&argc, &argv) != TT_OK) fail(tt_last_error());
    const bench_config *bc = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof configs / sizeof configs[0]; i++)
        if (strcmp(configs[i].name, argv[1]) == 0) bc = &configs[i];
    const char *usage = "usage: [mpirun -np R] bench_dist baby|mid [threads] [accum] "
                        "[blocking|overlap|alternate] [bucket elements]";
    if (!bc || argc > 6) fail(usage);
    int threads = argc > 2 ? atoi(argv[2]) : 1, accum = argc > 3 ? atoi(argv[3]) : 1;
    if (threads < 1 || accum < 1) fail("threads and accum must be positive");
    enum { MODE_BLOCKING, MODE_OVERLAP, MODE_ALTERNATE } mode = MODE_BLOCKING;
    if (argc > 4 && strcmp(argv[4], "overlap") == 0) mode = MODE_OVERLAP;
    else if (argc > 4 && strcmp(argv[4], "alternate") == 0) mode = MODE_ALTERNATE;
    else if (argc > 4 && strcmp(argv[4], "blocking") != 0) fail(usage);
    long long bucket = argc > 5 ? atoll(argv[5]) : (long long)TT_DIST_BUCKET;
    if (bucket < 1 || bucket > INT32_MAX) fail("the bucket size must be in 1 .. 2^31 - 1");
    tt_dist_set_bucket_size((size_t)bucket);
    tt_set_num_threads(threads);
    int rank = tt_dist_rank(), ranks = tt_dist_world_size();

    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = bc->vocab;
    cfg.block_size = bc->block;
    cfg.n_layer = bc->n_layer;
    cfg.n_head = bc->n_head;
    cfg.n_kv_head = bc->n_head;
    cfg.n_embd = bc->n_embd;
    tt_gpt gpt;
    if (tt_gpt_init(&gpt, &cfg, &rng) != TT_OK) fail(tt_last_error());
    if (tt_dist_broadcast_params(&gpt.params) != TT_OK) fail(tt_last_error());
    tt_rng_seed(&rng, 1337 + (uint64_t)rank);  // each rank its own batches
    tt_optim opt;
    tt_optim_config oc = tt_adamw_config(1e-3);
    oc.beta2 = 0.99;
    tt_optim_init(&opt, oc);
    tt_optim_add_decay_groups(&opt, &gpt.params, 0.1);

    // Alternating, the steps take turns (overlap on the odd ones) and each mode gets
    // bc->steps of them: both see the same load from the rest of the machine.
    int warmup = 3, n = bc->steps, nmodes = mode == MODE_ALTERNATE ? 2 : 1;
    double *ms = malloc((size_t)(2 * n) * sizeof *ms);
    double *ar = malloc((size_t)(2 * n) * sizeof *ar), *sy = malloc((size_t)(2 * n) * sizeof *sy);
    if (!ms || !ar || !sy) fail("out of memory");
    for (int s = 0; s < warmup + nmodes * n; s++) {
        bool overlap = mode == MODE_OVERLAP || (mode == MODE_ALTERNATE && s % 2 == 1);
        double t0 = now_ms();
        tt_scope_begin();
        double r0 = tt_dist_allreduce_seconds();
        for (int a = 0; a < accum; a++) {  // backward sums the micro-batches' gradients
            tt_tensor *x = random_tokens(&rng, bc), *y = random_tokens(&rng, bc);
            tt_tensor *loss = tt_gpt_loss(&gpt, x, y);
            if (overlap && a == accum - 1 &&
                tt_dist_overlap_begin(&gpt.params, NULL, NULL) != TT_OK)
                fail(tt_last_error());
            tt_backward(loss);
        }
        double w0 = now_ms(), w1 = w0;
        if (overlap) {
            if (tt_dist_overlap_end(&gpt.params) != TT_OK) fail(tt_last_error());
        } else {
            // A one-number all-reduce first: the wait for the slowest rank (sync), so that the
            // gradients' all-reduce below times the communication alone.
            double one = 1;
            if (tt_dist_allreduce_f64(&one, 1) != TT_OK) fail(tt_last_error());
            w1 = now_ms();
            r0 = tt_dist_allreduce_seconds();
            if (tt_dist_allreduce_grads(&gpt.params) != TT_OK) fail(tt_last_error());
        }
        double r1 = tt_dist_allreduce_seconds();
        tt_clip_grad_norm(&gpt.params, 1.0);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        tt_scope_end();
        if (s >= warmup) {  // blocking steps in [0, n), overlapped ones in [n, 2n)
            int i = (overlap ? n : 0) + (s - warmup) / nmodes;
            ms[i] = now_ms() - t0;
            ar[i] = 1e3 * (r1 - r0);
            sy[i] = w1 - w0;
        }
    }
    // Rank 0's view: the step ends for every rank at the all-reduce, so its time is the job's.
    int64_t global = bc->batch * accum * ranks;
    for (int m = 0; m < 2; m++) {
        bool overlap = m == 1;
        if ((overlap && mode == MODE_BLOCKING) || (!overlap && mode == MODE_OVERLAP)) continue;
        double *v = ms + m * n, *va = ar + m * n, *vs = sy + m * n;
        double med = median(v, n), med_ar = median(va, n), med_sy = median(vs, n);
        if (rank == 0)
            printf("bench dist config=%s ranks=%d threads=%d micro_batches=%d "
                   "global_batch=%lld allreduce=%s%s bucket=%lld ms_per_step=%.2f "
                   "tokens_per_s=%.0f allreduce_ms=%.3f allreduce_share=%.1f%% "
                   "sync_wait_ms=%.3f grad_mb=%.2f steps=%d\n", bc->name, ranks, threads,
                   accum, (long long)global, overlap ? "overlap" : "blocking",
                   mode == MODE_ALTERNATE ? "(alternating)" : "", bucket, med,
                   (double)(global * bc->block) / (med / 1e3), med_ar, 100.0 * med_ar / med,
                   med_sy, 4.0 * (double)tt_params_numel(&gpt.params) / (1024.0 * 1024.0), n);
    }
    free(ms);
    free(ar);
    free(sy);
    tt_optim_free(&opt);
    tt_gpt_free(&gpt);
    tt_dist_finalize();
    return 0;
}
