// The trainer over ranks, run by tests/run_train_dist.sh: Linear(4, 3) trained 6 steps on 16
// fixed rows, each step micro_batches = ranks x accum micro-batches of 4 rows (micro-batch
// g = rank x accum + a takes rows 4g .. 4g + 3). Rank 0 prints each step's loss and the
// parameters' fingerprint, so runs compare bit for bit: 2 ranks x 1 micro-batch against
// 1 rank x 2 (each gradient element is (a + b) / 2 either way), and the all-reduce overlapped
// with the backward against the plain one. First tt_trainer_ranks_agree on equal hashes and
// on hashes that differ at rank 1's item 1.
//
//   train_dist_check ACCUM [overlap]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "dist/dist.h"

int main(int argc, char **argv) {
    if (tt_dist_init(&argc, &argv) != TT_OK) {
        fprintf(stderr, "train_dist_check: %s\n", tt_last_error());
        return 1;
    }
    int64_t accum = argc > 1 ? atoi(argv[1]) : 1;
    int64_t M = accum * tt_dist_world_size();
    if (accum < 1 || M > 4) {
        fprintf(stderr, "usage: train_dist_check ACCUM [overlap] (ranks x ACCUM <= 4)\n");
        return 2;
    }
    int bad_rank, bad_item;  // the same hashes agree; a rank's own number differs at item 1
    uint64_t same[2] = {7, 8}, mine[3] = {7, (uint64_t)tt_dist_rank(), 9};
    if (tt_trainer_ranks_agree(same, 2, &bad_rank, &bad_item) != TT_OK || bad_rank != -1) {
        fprintf(stderr, "train_dist_check: equal hashes disagree\n");
        return 1;
    }
    tt_status st = tt_trainer_ranks_agree(mine, 3, &bad_rank, &bad_item);
    bool want = tt_dist_world_size() == 1 ? st == TT_OK
                                          : st == TT_ERR_MISMATCH && bad_rank == 1 && bad_item == 1;
    if (!want) {
        fprintf(stderr, "train_dist_check: ranks_agree gave %d, rank %d item %d\n", (int)st,
                bad_rank, bad_item);
        return 1;
    }
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 4, 3, true, &rng);
    tt_params params;
    tt_params_init(&params);
    tt_nn_linear_params(&fc, &params, "fc");
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(16, 4)), *y = tt_randn(&rng, TT_F32,
                                                                      TT_SHAPE(16, 3));
    tt_optim opt;
    tt_optim_init(&opt, tt_sgd_config(0.1));
    tt_optim_add_decay_groups(&opt, &params, 0.1);
    tt_trainer_opts to = tt_trainer_opts_default();
    to.iters = 6;
    to.accum = accum;
    to.clip = 1.0;
    to.overlap = argc > 2 && strcmp(argv[2], "overlap") == 0;
    tt_trainer tr;
    if (tt_trainer_init(&tr, &to, &params, &opt, NULL) != TT_OK) return 1;
    if (tt_dist_broadcast_params(&params) != TT_OK) return 1;
    while (tt_trainer_next(&tr)) {
        for (int64_t a = 0; a < tr.accum; a++) {
            int64_t g = tt_dist_rank() * accum + a;
            tt_scope_begin();
            tt_tensor *pred = tt_nn_linear_forward(&fc, tt_narrow(x, 0, 4 * g, 4));
            tt_trainer_backward(&tr, tt_mse_loss(pred, tt_narrow(y, 0, 4 * g, 4)));
            tt_scope_end();
        }
        if (!tt_trainer_step(&tr)) {
            fprintf(stderr, "train_dist_check: %s\n", tt_last_error());
            return 1;
        }
        if (tt_dist_rank() == 0) printf("step %lld loss %.17g\n", (long long)tr.step, tr.loss);
    }
    if (tt_dist_rank() == 0)
        printf("fingerprint %016llx\n", (unsigned long long)tt_params_fingerprint(&params));
    tt_trainer_free(&tr);
    tt_optim_free(&opt);
    tt_params_free(&params);
    tt_nn_linear_free(&fc);
    tt_release(x);
    tt_release(y);
    tt_dist_finalize();
    return 0;
}
