// The GPT programs' micro-batches and ranks (train.h): each micro-batch slot's batch and
// dropout streams, saved in and restored from checkpoints, and the check that every rank of an
// mpirun job runs the same training.
#include "train.h"

#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

// ---- slots ----

// The fresh streams of slot g >= 1, from --seed (slot 0's come from the model and
// train_data_seed).
void slot_seed(slot_rngs *r, int64_t seed, int64_t g) {
    tt_rng_seed(&r->data, ((uint64_t)seed ^ 0xDA7A5EEDull) + (uint64_t)g * 0x9E3779B97F4A7C15ull);
    tt_rng_seed(&r->drop, ((uint64_t)seed ^ 0xD80F0D7ull) + (uint64_t)g * 0xBF58476D1CE4E5B9ull);
}

void slot_pack(unsigned char *b, const slot_rngs *r) {
    const tt_rng *two[2] = {&r->data, &r->drop};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) *b++ = (unsigned char)(two[k]->s[i] >> (8 * j));
}

void slot_unpack(slot_rngs *r, const unsigned char *b) {
    tt_rng *two[2] = {&r->data, &r->drop};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++) {
            uint64_t v = 0;
            for (int j = 0; j < 8; j++) v |= (uint64_t)*b++ << (8 * j);
            two[k]->s[i] = v;
        }
}


void init_slots(gpt_run *r, const tt_checkpoint *ck) {
    train_state *s = &r->s;
    int64_t A = r->A, M = r->M;
    s->micro_batches = M;
    r->all_slots = malloc((size_t)M * SLOT_BYTES);
    r->slots = malloc((size_t)A * sizeof *r->slots);
    if (!r->all_slots || !r->slots) die("out of memory");
    const unsigned char *saved = NULL;
    size_t saved_n = 0;
    if (opt.resume && M > 1 &&
        (!tt_ckpt_get_bytes(ck, "train.rng_slots", &saved, &saved_n) ||
         saved_n != (size_t)(M - 1) * SLOT_BYTES))
        die("checkpoint '%s': train.rng_slots is missing or not %lld bytes; the file is not a "
            "valid %s checkpoint", opt.resume, (long long)(M - 1) * SLOT_BYTES, prog->name);
    for (int64_t a = 0; a < A; a++) {
        int64_t g = r->rank * A + a;
        if (g == 0) {
            r->slots[a].data = s->st.data_rng;
            r->slots[a].drop = r->gpt.dropout_rng;
        } else if (opt.resume) {
            slot_unpack(&r->slots[a], saved + (g - 1) * SLOT_BYTES);
        } else {
            slot_seed(&r->slots[a], opt.seed, g);
        }
    }
    r->slot = -1;
}

void gather_slots(gpt_run *r) {
    train_state *s = &r->s;
    int64_t accum = r->A;
    const slot_rngs *mine = r->slots;
    unsigned char *all = r->all_slots;
    unsigned char *packed = malloc((size_t)accum * SLOT_BYTES);
    if (!packed) die("out of memory");
    for (int64_t a = 0; a < accum; a++) slot_pack(packed + a * SLOT_BYTES, &mine[a]);
    if (tt_dist_allgather(all, packed, (size_t)accum * SLOT_BYTES) != TT_OK)
        die("saving the micro-batch streams: %s", tt_last_error());
    free(packed);
    slot_rngs first;
    slot_unpack(&first, all);
    s->st.data_rng = first.data;  // slot 0 (the model's dropout stream is slot 0's on rank 0)
    s->slot_bytes = all + SLOT_BYTES;
}

// ---- micro-batches ----
// The gradient sum over micro-batches and ranks is the trainer's (train/train.h): with the
// slots, 1 rank with --grad-accum 2 and 2 ranks of 1 micro-batch compute (g0 + g1) / 2, bit for
// bit. A micro-batch's dropout masks come from its slot's stream: the model holds it while the
// micro-batch runs, and it goes back to its slot when the next one starts.

void slot_batch(gpt_run *r, int64_t a, tt_tensor **x, tt_tensor **y) {
    if (r->slot >= 0) r->slots[r->slot].drop = r->gpt.dropout_rng;
    r->gpt.dropout_rng = r->slots[a].drop;
    r->slot = a;
    tt_dataset_batch(&r->ds, TT_SPLIT_TRAIN, r->B, r->T, &r->slots[a].data, x, y);  // (B, T)
}

void sync_slots(gpt_run *r) {
    if (r->slot >= 0) r->slots[r->slot].drop = r->gpt.dropout_rng;
    r->gpt.dropout_rng = r->slots[0].drop;
    r->slot = 0;
}

// ---- several ranks: the same run everywhere ----

// XXH3-64 of what every rank must agree on, one hash per item of rank_items.
enum { RANK_CONFIG, RANK_FLAGS, RANK_DATA, RANK_PARAMS, RANK_STEP, RANK_NITEMS };
static const char *const rank_items[RANK_NITEMS][2] = {
    {"model config", "pass the same model flags to every rank"},
    {"training flags", "pass the same train flags to every rank"},
    {"data", "give every rank the same --data file (the same bytes at that path)"},
    {"initial parameters", "run the same build on every machine, and --resume every rank from "
                           "the same checkpoint"},
    {"step", "--resume every rank from the same checkpoint"},
};

static uint64_t hash_f64s(const double *v, size_t n) { return XXH3_64bits(v, n * sizeof *v); }

// The tokens of the data and its split (token shards: every file's bytes, read once).
static uint64_t hash_data(const tt_text_dataset *ds) {
    if (!ds->shards)
        return XXH3_64bits_withSeed(ds->tokens, (size_t)ds->n * sizeof *ds->tokens,
                                    (uint64_t)ds->n_train);
    uint64_t h = (uint64_t)ds->n_train;
    for (int i = 0; i < ds->shards->n_shards; i++) {
        const tt_shard *sh = &ds->shards->shards[i];
        h = XXH3_64bits_withSeed(sh->tokens, (size_t)sh->n * (size_t)sh->width, h ^ sh->split);
    }
    return h;
}

// Every rank hashes its config, flags, data, parameters (before rank 0's are broadcast) and
// step; tt_trainer_ranks_agree compares every rank's with rank 0's, and each rank exits naming
// the first rank and item that differ (all reach the same verdict, so all of them stop).
void check_ranks_agree(const gpt_run *r) {
    const train_state *s = &r->s;
    const tt_gpt *gpt = &r->gpt;
    const tt_text_dataset *ds = &r->ds;
    int ranks = tt_dist_world_size();
    if (ranks == 1) return;
    uint64_t mine[RANK_NITEMS];
    double cfg[MAX_FIELDS];
    for (int i = 0; i < tt_gpt_nfields; i++) cfg[i] = tt_gpt_field_get(&s->cfg, &tt_gpt_fields[i]);
    mine[RANK_CONFIG] = hash_f64s(cfg, (size_t)tt_gpt_nfields);
    double fl[17 + 16] = {(double)opt.batch, (double)opt.grad_accum, (double)opt.iters,
                          (double)opt.decay_iters, (double)opt.warmup, (double)opt.eval_every,
                          (double)opt.eval_iters, (double)opt.seed, opt.lr, opt.min_lr,
                          opt.weight_decay, opt.beta2, opt.grad_clip, opt.muon_lr,
                          opt.muon_weight_decay,
                          strcmp(opt.optim, "muon") == 0 ? 1.0 : 0.0,
                          strcmp(opt.precision, "bf16") == 0 ? 1.0 : 0.0};
    int nfl = 17 + schedule_hash_values(fl + 17);  // and the schedule's flags
    mine[RANK_FLAGS] = hash_f64s(fl, (size_t)nfl);
    mine[RANK_DATA] = hash_data(ds);
    mine[RANK_PARAMS] = tt_params_fingerprint(&gpt->params);
    mine[RANK_STEP] = (uint64_t)s->st.step;
    int rank, item;
    tt_status st = tt_trainer_ranks_agree(mine, RANK_NITEMS, &rank, &item);
    if (st == TT_ERR_MISMATCH)
        die_usage("rank %d's %s differs from rank 0's; %s", rank, rank_items[item][0],
                  rank_items[item][1]);
    if (st != TT_OK) die("%s", tt_last_error());
}
