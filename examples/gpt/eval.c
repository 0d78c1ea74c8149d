// The GPT programs' eval command: the mean train and val loss of a checkpoint (or GPT-2's
// weights) over --eval-iters batches of each split, with the run's data, batch and seed.
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cmd_eval(void) {
    tt_checkpoint ck;
    train_state s;
    tt_gpt gpt;
    const char *path = open_model("eval", &gpt, &s, &ck);
    // Defaults from the run that wrote the checkpoint: its data, batch, eval batches, seed.
    data_from_ckpt(&ck);
    int64_t v;
    if (!given("--batch") && tt_ckpt_get_i64(&ck, "train.batch", &v))
        opt.batch = v, from_ckpt("--batch", path);
    if (!given("--eval-iters") && tt_ckpt_get_i64(&ck, "train.eval_iters", &v))
        opt.eval_iters = v, from_ckpt("--eval-iters", path);
    if (!given("--seed") && tt_ckpt_get_i64(&ck, "train.seed", &v)) opt.seed = v;
    tt_ckpt_free(&ck);
    if (s.tok.n_vocab > s.cfg.vocab_size)
        die_usage("'%s' has a vocabulary of %lld, fewer than the %lld ids of the %s tokenizer; "
                  "pass the tokenizer it was trained with", path, (long long)s.cfg.vocab_size,
                  (long long)s.tok.n_vocab, tt_tokenizer_name(&s.tok));
    check_memory(&s.cfg, opt.batch, s.cfg.block_size, false);

    apply_quantize(&gpt);
    tt_text_dataset ds;
    load_data(&ds, opt.data, &s.tok, s.cfg.block_size,
              "evaluate on a text whose characters the checkpoint knows");
    double tr = estimate_split(&gpt, &ds, TT_SPLIT_TRAIN, opt.batch, s.cfg.block_size,
                               opt.eval_iters, opt.seed);
    double va = estimate_split(&gpt, &ds, TT_SPLIT_VAL, opt.batch, s.cfg.block_size,
                               opt.eval_iters, opt.seed);
    printf("eval train_loss=%.6f val_loss=%.6f\n", tr, va);
    check_stdout();
    tt_gpt_free(&gpt);
    tt_dataset_free(&ds);
    tt_tokenizer_free(&s.tok);
    return 0;
}
