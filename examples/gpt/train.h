// The GPT programs' training run (train.c): the setup around the library's trainer
// (train/train.h) that char_gpt.c and gpt's train command drive in their loop,
//
//     gpt_run r;
//     gpt_train_begin(&r);                                // flags, data, model, AdamW, files
//     while (tt_trainer_next(&r.tr)) {                    // the step's learning rate
//         for (int64_t a = 0; a < r.tr.accum; a++) {      // this rank's micro-batches
//             tt_scope_begin();
//             tt_tensor *x, *y;
//             gpt_train_batch(&r, a, &x, &y);             // (B, T) tokens, the next tokens
//             tt_tensor *loss = tt_gpt_loss(&r.gpt, x, y);    // forward and loss
//             tt_trainer_backward(&r.tr, loss);           // backward, gradients summed
//             tt_scope_end();
//         }
//         tt_trainer_step(&r.tr);  // mean over micro-batches and ranks, clip, AdamW, eval, save
//     }
//     return gpt_train_end(&r);                           // a stop's message and exit code
//
// The micro-batch slots and rank agreement are train_dist.c's; the flags read back on --resume
// and the checks of the train flags train_setup.c's.
#ifndef GPT_TRAIN_H
#define GPT_TRAIN_H

#include "cli.h"

// ---- micro-batch slots (train_dist.c) ----
// A step takes micro_batches = ranks x --grad-accum micro-batches; rank r runs slots
// r * grad_accum .. r * grad_accum + grad_accum - 1. Each slot has its own batch stream and
// dropout stream, so what a step sees does not depend on how its slots are spread over ranks:
// a run of 2 ranks and one of 1 rank with --grad-accum 2 draw the same batches and masks, and
// --resume may change the number of ranks. Slot 0's streams are the single-process ones
// (rng.data, rng.model): with one slot, training is what it was before slots existed. A slot's
// two streams are saved as 8 little-endian u64 (SLOT_BYTES) in the checkpoint's
// train.rng_slots, slots 1 .. micro_batches - 1 in order.

typedef struct slot_rngs {
    tt_rng data, drop;
} slot_rngs;
#define SLOT_BYTES 64

typedef struct gpt_run {
    train_state s;
    tt_gpt gpt;
    tt_optim o;
    tt_lr_schedule sched;
    tt_trainer tr;         // the step, accumulation, all-reduce, evals, saves, stops
    tt_text_dataset ds;
    int rank, ranks;
    bool lead;             // rank 0: prints, writes --out and --log
    int64_t A, M, B, T;    // micro-batches per step on this rank, on all ranks; batch shape
    slot_rngs *slots;      // this rank's A slots
    int64_t slot;          // the slot whose dropout stream the model holds; -1: none
    unsigned char *all_slots;  // every slot's streams, packed (gather_slots)
    FILE *log;
} gpt_run;

// Everything before the first step: the flags (with --resume's from the checkpoint), the data,
// the model and optimizer (fresh, resumed or --init-from's), the slots, the ranks' agreement,
// the output files, the trainer; prints the run's header on stderr. Exits on any bad input.
void gpt_train_begin(gpt_run *r);
// Micro-batch a's (B, T) input and target tokens, from its slot's streams (the model's
// dropout stream too).
void gpt_train_batch(gpt_run *r, int64_t a, tt_tensor **x, tt_tensor **y);
// After the loop: a stop's message and exit status (a divergence, a failed save or --log: 1;
// SIGINT / SIGTERM: 130 / 143), else the done line, the profile and trace; frees everything
// and returns 0.
int gpt_train_end(gpt_run *r);

// ---- train_dist.c ----

// The fresh streams of slot g >= 1, from --seed; a slot packed into SLOT_BYTES and back.
void slot_seed(slot_rngs *r, int64_t seed, int64_t g);
void slot_pack(unsigned char *b, const slot_rngs *r);
void slot_unpack(slot_rngs *r, const unsigned char *b);
// This rank's slots: fresh, or the streams of the checkpoint ck of --resume.
void init_slots(gpt_run *r, const tt_checkpoint *ck);
// Slot streams of this rank into the packed table of all slots (rank 0 keeps it for the
// checkpoint): an all-gather, so every rank calls it at the same steps.
void gather_slots(gpt_run *r);
// Every rank's config, flags, data, parameters and step agree, or all of them exit.
void check_ranks_agree(const gpt_run *r);
// Micro-batch a's batch from its slot's stream, with its dropout stream in the model.
void slot_batch(gpt_run *r, int64_t a, tt_tensor **x, tt_tensor **y);
// The model's dropout stream back into its slot, slot 0's into the model (as a checkpoint
// holds it).
void sync_slots(gpt_run *r);

// ---- train_setup.c ----

// The GPT checkpoint plus this program's entries: the tokenizer and the training flags.
void ckpt_fill(tt_checkpoint *ck, const train_state *s, const tt_gpt *gpt, const tt_optim *o,
               const char *data_path);
// On --resume: each flag not given comes from the checkpoint; model flags given must match.
void resume_flags(const tt_checkpoint *ck, const char *path, const train_state *s);
// The train flags in range and consistent; a default that conflicts with a given flag is
// lowered with a note.
void validate_train_flags(void);

// ---- schedule.c ----

// Whether --schedule reads flag (one of the schedule flags: --warmup, --min-lr, --warmdown,
// ...); true for any other flag.
bool schedule_uses(const char *flag);
// --schedule names a schedule, every schedule flag given is one it reads, and its flags fit
// (wsd: --warmup + --warmdown within --decay-iters, --warmdown defaulting to a fifth of it;
// onecycle: no empty phase, --iters within --decay-iters).
void validate_schedule_flags(void);
// The schedule of the flags: cosine, wsd, onecycle (its momentum becomes AdamW's beta1),
// plateau (the trainer observes each eval's val loss) or constant.
tt_lr_schedule gpt_schedule(void);
// The checkpoint's train.schedule and the schedule flags' train.* entries.
void schedule_ckpt_fill(tt_checkpoint *ck);
// On --resume: the checkpoint's schedule (cosine when it has none; a --schedule given must
// match) and each schedule flag not given that it holds.
void schedule_resume_flags(const tt_checkpoint *ck, const char *path);
// The schedule flags as numbers into v (room for 16), for the ranks' agreement; the count.
int schedule_hash_values(double *v);

#endif  // GPT_TRAIN_H
