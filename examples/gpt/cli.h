// The GPT programs' shared parts (examples/gpt/): char_gpt.c and gpt.c are their mains. One
// global set of options filled from the command line (cli.c); the checkpoint, model and data
// loading every command shares (model.c); the training run whose step each main writes out
// (train.c, train_setup.c, train_dist.c); the commands sample.c, eval.c, tools.c, export.c.
// Example code, not library code: bad input prints one line and exits 2, a failure at run time
// exits 1. See `gpt --help` and docs/checkpoint.md for what a checkpoint holds.
#ifndef GPT_CLI_H
#define GPT_CLI_H

#include "tinytorch.h"
#include "models/gpt/gpt.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define DEFAULT_DATA "data/tinyshakespeare.txt"
#define DEFAULT_DATA_NAME "tinyshakespeare.txt"  // its name for tt_data_path (data_file)
#define TRAIN_FRAC 0.9
// Size caps of these programs (a GPT on a CPU); they also bound what a checkpoint may ask us to
// allocate: the causal mask alone is block^2 ints per layer.
#define MAX_LAYERS 64
#define MAX_EMBD 4096
#define MAX_HEADS 256
#define MAX_BLOCK 2048
#define MAX_VOCAB (1 << 20)
#define MAX_FIELDS 64

// Data-parallel training, in both programs' usage texts.
#define DIST_USAGE \
    "--batch is per micro-batch; --grad-accum N sums the gradients of N micro-batches per\n" \
    "step. `mpirun -np R char_gpt train ...` (a build with make MPI=1) trains on R processes:\n" \
    "each takes --grad-accum micro-batches of --batch from its own streams, the gradients are\n" \
    "averaged over all R x N micro-batches, and rank 0 alone prints and writes --out and\n" \
    "--log. A run of R ranks and --grad-accum N sees the same batches as one of 1 rank and\n" \
    "--grad-accum R x N (with R = 2 and N = 1, bit for bit the same losses). --resume works on\n" \
    "any R that divides the checkpoint's micro-batches per step (--grad-accum follows).\n" \
    "Gradients travel in buckets of --bucket elements. --overlap starts each bucket's\n" \
    "all-reduce during the last micro-batch's backward, as soon as its gradients are final\n" \
    "(the same bits; it pays when the network, not the cores, is the bottleneck: README).\n"

// ---- the program and its commands ----

enum {
    CMD_TRAIN = 1, CMD_SAMPLE = 2, CMD_EVAL = 4,  // char_gpt's and gpt's
    CMD_TOKENIZE = 8, CMD_ENCODE = 16, CMD_DECODE = 32, CMD_BPE_TRAIN = 64, CMD_EXPORT = 128,
    CMD_PREPARE = 256,
};
#define CMD_ANY 511
#define CMD_TOKENS (CMD_TOKENIZE | CMD_ENCODE | CMD_DECODE)  // the tokenizer tools

typedef struct gpt_program {
    const char *name;         // in messages and the usage text: "gpt", "char_gpt"
    const char *default_out;  // train's --out: "out/gpt.ckpt"
    bool char_only;           // char_gpt: no --tokenizer, --preset, --init-from, no tools
    const char *usage_head;   // the usage text: head, the model flags (indented), synopsis
    const char *usage_indent;  // (the other train flags, the other commands), tail
    const char *usage_synopsis;
    const char *usage_tail;
    const char *usage_more;  // printed after the tail; NULL: nothing
} gpt_program;

extern const gpt_program *prog;  // the running program

// ---- options ----

#define GPT_MAX_STOPS 16  // --stop given at most this often

typedef struct options {
    // train, eval
    const char *data, *out, *resume, *log;
    tt_gpt_config cfg;  // the model flags (the field table's), vocab_size from the data
    int64_t batch, iters, decay_iters, warmup;
    int64_t eval_every, eval_iters, seed, threads;
    int64_t grad_accum;  // micro-batches per step on each rank
    double lr, min_lr, weight_decay, beta2, grad_clip;
    const char *optim;  // "adamw", or "muon": Muon for the blocks' matrices (tt_gpt_optim_init)
    double muon_lr;     // the Muon group's lr (a schedule scales it as it scales --lr)
    double muon_weight_decay;  // the Muon group's decoupled weight decay (p *= 1 - lr wd)
    // train: the lr schedule (schedule.c) and the flags of each
    const char *schedule;                            // cosine, wsd, onecycle, plateau, constant
    int64_t warmdown;                                // wsd; 0 when not given: --decay-iters / 5
    double final_lr_frac;                            // wsd
    double pct_start, div_factor, final_div_factor;  // onecycle
    const char *anneal;                              // onecycle: cos or linear
    bool three_phase;                                // onecycle
    double factor, threshold;                        // plateau
    int64_t patience, cooldown;                      // plateau, in evals
    // sample
    const char *ckpt, *prompt;
    int64_t tokens, top_k, window;
    double temperature, top_p;
    bool no_cache;
    // gpt sample: generation settings, stop strings (--stop, repeatable), --prompts FILE
    double min_p, repeat_penalty;
    struct { const char *v[GPT_MAX_STOPS]; int n; } stops;
    const char *prompts;
    // gpt only
    const char *tokenizer, *preset, *init_from, *dtype;
    const char *format;  // export: safetensors (the default) or gguf
    const char *layout;  // export: gpt2 (the default) or llama (safetensors' tensor names)
    int64_t merges;
    // prepare: the --data files and directories (one --data takes every path after it), the
    // tokens per shard file
    struct { const char **v; int n; } inputs;
    int64_t shard_tokens;
    // train: "f32" or "bf16" (autocast of the products)
    const char *precision;
    // train: each block's forward under tt_activation_checkpoint (tt_gpt.checkpoint_blocks)
    bool checkpoint_blocks;
    // sample, eval: "int8" runs the Linears and the head int8 (tt_gpt_quantize), "f32" not
    const char *quantize;
    // ---- profiling (train): the per-op table, a Chrome trace of the steps ----
    bool profile;
    const char *trace;
    // train on several ranks: start the gradients' all-reduce during the last backward, in
    // buckets of this many elements
    bool overlap;
    int64_t bucket;
} options;

extern options opt;
extern int running_cmd;  // the CMD_* of argv[1]

// Reads argv: the command (argv[1]) and its flags into opt; exits 0 after --help, 2 on bad
// input (an unknown command, a command of gpt in char_gpt). Returns the command's CMD_*; a
// train command has joined the ranks of an mpirun job.
int gpt_cli_begin(int argc, char **argv, const gpt_program *p);
// After a command returned code: checks that nothing leaked, leaves the ranks; returns code.
int gpt_cli_end(int code);

// Whether the user gave flag name (of the running command).
bool given(const char *name);
// Where flag name's value came from, for messages: "" when given (" (given)" with say_given),
// " (the default)", or " (from the checkpoint PATH)".
const char *origin(const char *name, bool say_given);
// Exits unless the value flag name holds now (a model flag's when training) is in its range.
void check_flag(const char *name);
// Marks flag name's value as read from checkpoint path, and checks its range.
void from_ckpt(const char *name, const char *path);
bool optim_known(const char *name);  // --optim's values: adamw, muon
// The model flag the user gave (any field of the table); NULL when none.
const char *model_flag_given(void);
// The [lo, hi] of an integer config field: the table's range within this program's caps.
void field_range(const tt_gpt_field *f, int64_t *lo, int64_t *hi);

// ---- errors and output ----

// Bad input: one line naming the problem and the fix, exit 2.
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
void die_usage(const char *fmt, ...);
// A failure while running (I/O, a diverging loss): one line, exit 1.
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
void die(const char *fmt, ...);
// A one-line note on stderr: a default was changed to fit a flag the user gave.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void note(const char *fmt, ...);
// stdout may be a full disk or a closed pipe: exits when a flush fails.
void check_stdout(void);
// Refuses, before any work, an output (--out, its .best, --log, --trace) that would replace an
// input or another output, is a directory, FIFO or device, or cannot be written; mkdir -p of
// --out's directory first.
void check_outputs(int cmd);
// mkdir -p of dir, for flag's messages.
void make_dirs(const char *dir, const char *flagname);
// --out with .best before its extension (out/char_gpt.ckpt -> out/char_gpt.best.ckpt).
const char *best_path(void);
// --threads (tt_set_num_threads) and --precision's check; the number of threads.
void set_threads(void);
int nthreads(void);
double now_s(void);

// ---- checkpoints, models, data (model.c) ----

typedef struct train_state {
    tt_gpt_config cfg;
    tt_tokenizer tok;
    tt_gpt_state st;     // step, data stream, best / last eval losses
    int64_t saved_step;  // step of the last file this run wrote to --out; -1 before
    // Micro-batches per step over all ranks, and the streams of slots 1 .. micro_batches - 1
    // (slot_bytes; slot 0's are st.data_rng and the model's dropout stream): train_dist.c.
    int64_t micro_batches;
    unsigned char *slot_bytes;
} train_state;

// Loads a checkpoint and reads its config, tokenizer and training state, validating them.
void load_ckpt(tt_checkpoint *ck, const char *path, train_state *s);
// Builds the model of the checkpoint's config with its parameters and dropout stream.
void model_from_ckpt(tt_gpt *gpt, const tt_checkpoint *ck, const char *path);
// The model (and tokenizer) of --init-from / --ckpt path: a checkpoint of train, with its
// tokenizer, or a GPT-2 .safetensors, with the tokenizer of its metadata (gpt export's) or
// --tokenizer (default gpt2). ck receives the
// checkpoint when path is one (left empty otherwise); s its config, tokenizer and state.
void load_model(const char *flagname, const char *path, tt_gpt *gpt, train_state *s,
                tt_checkpoint *ck);
// Reads an integer / a number entry of a checkpoint or exits naming the key.
int64_t ck_i64(const tt_checkpoint *ck, const char *path, const char *key, int64_t lo,
               int64_t hi);
double ck_f64(const tt_checkpoint *ck, const char *path, const char *key);
// Without --data: the data file of the run that wrote the checkpoint, when it recorded one.
void data_from_ckpt(const tt_checkpoint *ck);
bool is_safetensors(const char *path);
// Whether path ends in .gguf (--init-from reads it as a GGUF gpt2 model).
bool is_gguf(const char *path);

// --tokenizer NAME (gpt2 or a vocab file; char is a dataset's); exits on failure.
void tok_open(tt_tokenizer *t, const char *name);
// A --tokenizer given with a checkpoint must be the one it was trained with.
void tok_check_given(const tt_tokenizer *t, const char *path);
// The ids of text[0 .. n) (tt_free them); a byte the char vocab lacks exits:
// "<what>: <the byte and its position><of>; <fix>".
int32_t *tok_encode(tt_tokenizer *t, const char *text, size_t n, size_t *n_out,
                    const char *what, const char *of, const char *fix);
// Loads the dataset in t's tokens (a char vocab without its text takes the file's); checks
// both splits fit the block (when block > 0); fix ends a message of a byte t lacks. Token
// shards (is_shard_data) are mapped: t, when it has no vocab yet, becomes the tokenizer file's
// beside them; else that file, when present, must hold t.
void load_data(tt_text_dataset *ds, const char *path, tt_tokenizer *t, int64_t block,
               const char *fix);
// Whether --data path names token shards (shards.h): a directory, a glob pattern (* ? [) or a
// .bin file; anything else is a text file.
bool is_shard_data(const char *path);
// The tokenizer file gpt prepare writes beside its shards, for --data spec: spec/tokenizer.ckpt
// for a directory, else tokenizer.ckpt in the directory of the pattern or file.
#define SHARDS_TOKENIZER "tokenizer.ckpt"
void shards_tokenizer_path(const char *spec, char *buf, size_t cap);
// The file read for --data path: the default corpus, when the working directory has no
// DEFAULT_DATA, is found by tt_data_path; any other path is itself.
const char *data_file(const char *path);
// Exits with the message of a --data file that cannot be read (status s).
void data_error(tt_status s, const char *path);
// Exits (1) with the estimate and the machine's memory when a run of c on (B, T) batches
// cannot fit, before it allocates.
void check_memory(const tt_gpt_config *c, int64_t B, int64_t T, bool training);
// The mean loss of iters batches of a split, from their own stream seeded by seed (the same
// batches at every eval, the same bits on any number of ranks).
double estimate_split(tt_gpt *gpt, const tt_text_dataset *ds, tt_data_split split,
                      int64_t batch, int64_t block, int64_t iters, int64_t seed);
// The model of sample and eval (cmd): --ckpt's, or (gpt) --init-from's, with its checkpoint,
// tokenizer and state (load_model); --threads set. Returns its path; exits when neither or
// both are given.
const char *open_model(const char *cmd, tt_gpt *gpt, train_state *s, tt_checkpoint *ck);
// --quantize int8: quantizes gpt's Linears and head, with a note on stderr.
void apply_quantize(tt_gpt *gpt);

// ---- the commands ----

// Each runs its command with opt and returns the exit status (bad input and failures exit).
int cmd_train(void);      // gpt's (train.c); char_gpt's loop is its main
int cmd_sample(void);     // sample.c: the prompt and the generated text
int cmd_eval(void);       // eval.c: the train and val loss
int cmd_tokenize(void);   // tools.c: the token counts of --data
int cmd_encode(void);     // tools.c: stdin's bytes to ids
int cmd_decode(void);     // tools.c: ids to bytes
int cmd_bpe_train(void);  // tools.c: a BPE vocab learned from --data
int cmd_export(void);     // export.c: GPT-2's safetensors layout
int cmd_prepare(void);    // prepare.c: token shards of text files

#endif  // GPT_CLI_H
