// The collectives of dist/ on known numbers, run under mpirun by tests/run_char_gpt_dist.sh
// (make test MPI=1) on 2 ranks, or alone as rank 0 of 1: rank 0's parameters reach every rank,
// gradients become their mean through every path of the bucketing (packed buckets split at a
// full bucket, a gradient larger than a bucket, f64 next to f32, a parameter no gradient
// reached), the same buckets overlapped with a backward, the sums and the gather. Exit status
// 1 and a line per failure on any mismatch.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "dist/dist.h"

static int fails = 0;

#define EXPECT(cond, ...)                                                         \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "dist_check (rank %d): ", tt_dist_rank());            \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            fails++;                                                              \
        }                                                                         \
    } while (0)

// Parameter k's element j on rank r: small integers, so every sum and mean is exact.
static double value(int r, int k, int64_t j) { return (double)((r + 1) * (int)(j % 7 + k)); }

// tt_dist_overlap_begin's prepare: parameter k's gradient + (k + 1), counted.
static int prepared;
static void add_index(int k, tt_tensor *grad, void *ctx) {
    (void)ctx;
    prepared++;
    for (int64_t j = 0; j < tt_numel(grad); j++) tt_set_at(grad, j, tt_at(grad, j) + k + 1);
}

int main(int argc, char **argv) {
    if (tt_dist_init(&argc, &argv) != TT_OK) {
        fprintf(stderr, "dist_check: %s\n", tt_last_error());
        return 1;
    }
    int rank = tt_dist_rank(), n = tt_dist_world_size();
    // A bucket of 8 elements: "a" (3) and "c" (4) share one, "b" (6) does not fit after them,
    // "big" (21) is reduced in place in 3 pieces, "d" is f64, "none" has no gradient but on
    // rank 0.
    tt_dist_set_bucket_size(8);
    const char *names[] = {"a", "c", "b", "big", "d", "none"};
    int64_t sizes[] = {3, 4, 6, 21, 5, 2};
    tt_dtype dtypes[] = {TT_F32, TT_F32, TT_F32, TT_F32, TT_F64, TT_F32};
    enum { NP = 6 };
    tt_params p;
    tt_params_init(&p);
    tt_tensor *t[NP];
    for (int k = 0; k < NP; k++) {
        t[k] = tt_set_requires_grad(tt_zeros(dtypes[k], TT_SHAPE(sizes[k])), true);
        tt_params_add(&p, NULL, names[k], t[k]);
        tt_tensor *g = tt_zeros(dtypes[k], TT_SHAPE(sizes[k]));
        for (int64_t j = 0; j < sizes[k]; j++) {
            tt_set_at(t[k], j, value(rank, k, j) + 100);  // rank-specific weights
            tt_set_at(g, j, value(rank, k, j));
        }
        if (k != NP - 1 || rank == 0) t[k]->grad = g;  // "none": no gradient on ranks > 0
        else tt_release(g);
    }

    if (tt_dist_broadcast_params(&p) != TT_OK) fprintf(stderr, "%s\n", tt_last_error()), fails++;
    for (int k = 0; k < NP; k++)
        for (int64_t j = 0; j < sizes[k]; j++)
            EXPECT(tt_at(t[k], j) == value(0, k, j) + 100, "broadcast: %s[%lld] = %g, "
                   "rank 0 has %g", names[k], (long long)j, tt_at(t[k], j),
                   value(0, k, j) + 100);

    if (tt_dist_allreduce_grads(&p) != TT_OK) fprintf(stderr, "%s\n", tt_last_error()), fails++;
    for (int k = 0; k < NP; k++) {
        EXPECT(t[k]->grad != NULL, "allreduce: %s has no gradient", names[k]);
        if (!t[k]->grad) continue;
        for (int64_t j = 0; j < sizes[k]; j++) {
            double sum = 0;
            for (int r = 0; r < n; r++) sum += k == NP - 1 && r > 0 ? 0 : value(r, k, j);
            double want = dtypes[k] == TT_F32 ? (double)((float)sum / (float)n) : sum / n;
            EXPECT(tt_at(t[k]->grad, j) == want, "allreduce: grad %s[%lld] = %g, want "
                   "the mean %g", names[k], (long long)j, tt_at(t[k]->grad, j), want);
        }
    }

    // The same buckets overlapped with a backward: L = sum_k sum(t[k] * c[k]) gives t[k] the
    // gradient c[k] = value(rank, k, .); rank 0 sums the terms first to last, the others last
    // to first (the gradients become final in other orders on each rank, the buckets still
    // start in one order); "none" is not in the loss on ranks > 0 (packed as zeros by end);
    // prepare adds k + 1 to each gradient before it is packed.
    for (int k = 0; k < NP; k++) tt_zero_grad(t[k]);
    prepared = 0;
    tt_scope_begin();
    tt_tensor *loss = NULL;
    for (int i = 0; i < NP; i++) {
        int k = rank == 0 ? i : NP - 1 - i;
        if (k == NP - 1 && rank > 0) continue;
        tt_tensor *c = tt_zeros(dtypes[k], TT_SHAPE(sizes[k]));
        for (int64_t j = 0; j < sizes[k]; j++) tt_set_at(c, j, value(rank, k, j));
        tt_tensor *term = tt_sum_all(tt_mul(t[k], c));
        if (dtypes[k] == TT_F64) term = tt_to_dtype(term, TT_F32);
        loss = loss ? tt_add(loss, term) : term;
    }
    if (tt_dist_overlap_begin(&p, add_index, NULL) != TT_OK)
        fprintf(stderr, "%s\n", tt_last_error()), fails++;
    tt_backward(loss);
    if (tt_dist_overlap_end(&p) != TT_OK) fprintf(stderr, "%s\n", tt_last_error()), fails++;
    tt_scope_end();
    EXPECT(prepared == NP, "overlap: prepare ran %d times for %d parameters", prepared, NP);
    for (int k = 0; k < NP; k++) {
        EXPECT(t[k]->grad != NULL, "overlap: %s has no gradient", names[k]);
        if (!t[k]->grad) continue;
        for (int64_t j = 0; j < sizes[k]; j++) {
            double sum = 0;
            for (int r = 0; r < n; r++)
                sum += (k == NP - 1 && r > 0 ? 0 : value(r, k, j)) + k + 1;
            double want = dtypes[k] == TT_F32 ? (double)((float)sum / (float)n) : sum / n;
            EXPECT(tt_at(t[k]->grad, j) == want, "overlap: grad %s[%lld] = %g, want "
                   "the mean %g", names[k], (long long)j, tt_at(t[k]->grad, j), want);
        }
    }

    double x[2] = {rank + 0.5, 1};
    if (tt_dist_allreduce_f64(x, 2) != TT_OK) fprintf(stderr, "%s\n", tt_last_error()), fails++;
    EXPECT(x[0] == n * n / 2.0 && x[1] == n, "allreduce_f64: %g %g, want %g %g", x[0], x[1],
           n * n / 2.0, (double)n);

    int mine[2] = {rank, 10 * rank}, *all = malloc((size_t)n * sizeof mine);
    if (tt_dist_allgather(all, mine, sizeof mine) != TT_OK)
        fprintf(stderr, "%s\n", tt_last_error()), fails++;
    for (int r = 0; r < n; r++)
        EXPECT(all[2 * r] == r && all[2 * r + 1] == 10 * r, "allgather: rank %d sent %d %d",
               r, all[2 * r], all[2 * r + 1]);
    free(all);

    tt_params_free(&p);
    for (int k = 0; k < NP; k++) tt_release(t[k]);
    if (rank == 0 && fails == 0)
        printf("dist_check: broadcast, the gradients' mean (every bucket path, blocking and "
               "overlapped with a backward), sums and "
               "gather agree on %d rank%s\n", n, n > 1 ? "s" : "");
    tt_dist_finalize();
    return fails ? 1 : 0;
}
