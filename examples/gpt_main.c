// The GPT programs' shared code: train, sample and evaluate a GPT (AdamW, warmup + cosine decay,
// checkpoints and a bit-exact --resume) on the tokens of a char, GPT-2 or trained BPE tokenizer;
// `gpt` adds tokenize / encode / decode / bpe-train / export, GPT-2 presets and --init-from.
// char_gpt is this code with the char tokenizer fixed (examples/char_gpt.c). Example code, not
// library code: bad input prints one line and exits 2, a failure at run time exits 1. See
// `gpt --help` and docs/checkpoint.md for what a checkpoint holds.
#include "gpt_main.h"
#include "gpt_flags.h"

#include "tinytorch.h"
#include "models/gpt/gpt.h"
#include "dist/dist.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define DEFAULT_DATA "data/tinyshakespeare.txt"
#define GPT2_ENCODER "data/gpt2/encoder.json"
#define GPT2_MERGES "data/gpt2/vocab.bpe"
#define TRAIN_FRAC 0.9
// Size caps of these programs (a GPT on a CPU); they also bound what a checkpoint may ask us to
// allocate: the causal mask alone is block^2 ints per layer.
#define MAX_LAYERS 64
#define MAX_EMBD 4096
#define MAX_HEADS 256
#define MAX_BLOCK 2048
#define MAX_VOCAB (1 << 20)

static const gpt_program *prog;  // which program runs: its name, default --out, commands

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

// The usage text of char_gpt: the model flags between head and tail come from the config's
// field table.
static const char *char_usage_head =
    "usage:\n"
    "  char_gpt train [--data FILE] [--out FILE] [--resume FILE] [--log FILE.csv]\n";
static const char *char_usage_tail =
    "                 [--batch 12] [--iters 2000] [--decay-iters ITERS] [--lr 1e-3]\n"
    "                 [--min-lr 1e-4] [--warmup 100] [--weight-decay 0.1] [--beta2 0.99]\n"
    "                 [--grad-clip 1.0] [--eval-every 250] [--eval-iters 20] [--seed 1337]\n"
    "                 [--threads N] [--precision f32|bf16] [--grad-accum 1] [--profile]\n"
    "                 [--trace FILE.json] [--overlap] [--bucket 4194304]\n"
    "  char_gpt sample --ckpt FILE [--prompt TEXT] [--tokens 500] [--temperature 0.8]\n"
    "                 [--top-k 200] [--top-p 1.0] [--seed 1337] [--no-cache] [--block N]\n"
    "                 [--threads N] [--quantize int8]\n"
    "  char_gpt eval --ckpt FILE [--data FILE] [--eval-iters N] [--batch N] [--seed N]\n"
    "                 [--threads N] [--quantize int8]\n"
    "\n"
    "train: --data defaults to " DEFAULT_DATA ", --out to out/char_gpt.ckpt (its directory is\n"
    "created). --out is written at each eval (every --eval-every steps and at the end), so it\n"
    "holds the last state; the state with the best val loss so far is also kept in the --out\n"
    "name with .best before its extension (out/char_gpt.best.ckpt). --resume FILE continues\n"
    "from FILE with the losses an uninterrupted run would have had, saving into FILE unless\n"
    "--out is given. An output that is an input, a directory, FIFO or device is refused; a\n"
    "non-finite loss or weight stops training unsaved; the first SIGINT/SIGTERM saves --out\n"
    "after the step and exits 130/143 (a second one kills). On --resume, flags you do\n"
    "not give come from the checkpoint; model flags you give must match it. --decay-iters\n"
    "(default --iters) is where the cosine schedule reaches --min-lr, so a run can stop early\n"
    "and be resumed on the same schedule. A default that conflicts with a flag you give\n"
    "(--warmup 100 with --iters 40, --min-lr 1e-4 with --lr 1e-5) is lowered with a note on\n"
    "stderr. --precision bf16 trains with bf16 matmul products (f32 accumulation; weights,\n"
    "gradients, optimizer and checkpoint stay f32). stdout: `eval step=N train_loss=F\n"
    "val_loss=F` at each eval and\n"
    "`done steps=N train_loss=F val_loss=F ms_per_step=F tokens_per_s=F`.\n"
    "--profile prints the model summary before training and, at the end, a table of the\n"
    "training steps' ops (calls, forward / backward time, share of the step time, FLOPs, bytes\n"
    "moved, peak memory) on stderr; --trace FILE.json writes one event per op of the steps\n"
    "(open it in ui.perfetto.dev or chrome://tracing). Evals are not profiled.\n"
    DIST_USAGE
    "sample prints the prompt and the generated text; eval prints\n"
    "`eval train_loss=F val_loss=F` (mean over --eval-iters batches per split).\n"
    "--quantize int8 (sample, eval) runs every Linear and the head in int8 (weights with a\n"
    "scale per output channel, activations with a scale per token, int32 sums; embeddings,\n"
    "norms, attention and the KV cache stay f32) and notes the weight bytes on stderr.\n";

// gpt's usage text, the same way.
static const char *gpt_usage_head =
    "usage:\n"
    "  gpt train [--tokenizer char|gpt2|VOCAB] [--preset baby|gpt2|gpt2-medium]\n"
    "            [--init-from FILE] [--data FILE] [--out FILE] [--resume FILE] [--log FILE.csv]\n";
static const char *gpt_usage_tail =
    "            [--batch 12] [--iters 2000] [--decay-iters ITERS] [--lr 1e-3]\n"
    "            [--min-lr 1e-4] [--warmup 100] [--weight-decay 0.1] [--beta2 0.99]\n"
    "            [--grad-clip 1.0] [--eval-every 250] [--eval-iters 20] [--seed 1337]\n"
    "            [--threads N] [--grad-accum 1] [--profile] [--trace FILE.json] [--overlap]\n"
    "            [--bucket 4194304]\n"
    "  gpt sample --ckpt FILE | --init-from FILE [--tokenizer T] [--prompt TEXT] [--tokens 500]\n"
    "            [--temperature 0.8] [--top-k 200] [--top-p 1.0] [--seed 1337] [--no-cache]\n"
    "            [--block N] [--threads N] [--quantize int8]\n"
    "  gpt eval --ckpt FILE | --init-from FILE [--tokenizer T] [--data FILE] [--eval-iters N]\n"
    "            [--batch N] [--seed N] [--threads N] [--quantize int8]\n"
    "  gpt tokenize [--tokenizer T | --ckpt FILE] [--data FILE]\n"
    "  gpt encode [--tokenizer T | --ckpt FILE] [--data FILE]  < bytes  > ids\n"
    "  gpt decode [--tokenizer T | --ckpt FILE] [--data FILE]  < ids  > bytes\n"
    "  gpt bpe-train --merges N --out VOCAB [--data FILE]\n"
    "  gpt export --ckpt FILE --out FILE.safetensors [--dtype f32|f16|bf16]\n"
    "\n"
    "--tokenizer: char (one token per distinct byte of --data; the default), gpt2 (GPT-2's\n"
    "BPE, from " GPT2_ENCODER " and " GPT2_MERGES "; run `make data`)\n"
    "or the path of a VOCAB written by `gpt bpe-train`. A checkpoint keeps its tokenizer (a\n"
    "trained vocab whole), so sample, eval, tokenize, encode and decode with --ckpt need no\n"
    "--tokenizer. --data defaults to " DEFAULT_DATA "; --out of train to out/gpt.ckpt.\n"
    "train: --preset sets every model flag (flags you give override it; the vocab size is the\n"
    "tokenizer's). --init-from starts from the weights of a checkpoint of gpt train or of a\n"
    "Hugging Face GPT-2 model.safetensors (the config is the file's, so model flags are\n"
    "refused; the optimizer starts fresh). The rest is char_gpt's: --out holds the last state,\n"
    "its .best name (out/gpt.best.ckpt) the best val loss; --resume FILE continues bit for bit\n"
    "(into FILE unless --out is given); outputs, divergence and signals as char_gpt's; a\n"
    "default that conflicts with a flag you give is lowered with a note; stdout: `eval step=N\n"
    "train_loss=F val_loss=F` at each eval and a `done ...` line. --grad-accum and mpirun\n"
    "as char_gpt's.\n"
    "sample prints the prompt and the generated text (--temperature 0: greedy); eval prints\n"
    "`eval train_loss=F val_loss=F`. A --init-from FILE.safetensors holds GPT-2 weights and no\n"
    "tokenizer: gpt2 unless --tokenizer names another. --quantize int8 as char_gpt's.\n"
    "tokenize prints `tokens=N train=N val=N` (the text split 90/10 by characters, each part\n"
    "encoded on its own); encode prints the ids of stdin's bytes on one line; decode writes the\n"
    "bytes of the ids on stdin (whitespace-separated); bpe-train learns --merges merges from\n"
    "--data and writes VOCAB; export writes a checkpoint's model in GPT-2's safetensors layout\n"
    "(the model must be GPT-2-shaped: train it with --preset gpt2).\n";

// ---- errors ----

// One line on stderr, then exit(code).
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void vdie(int code, const char *fmt, va_list ap) {
    if (tt_dist_world_size() == 1) {
        fprintf(stderr, "%s: ", prog->name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    } else {  // one write per line: the ranks' lines do not interleave
        char line[8192];
        int n = snprintf(line, sizeof line, "%s (rank %d of %d): ", prog->name, tt_dist_rank(),
                         tt_dist_world_size());
        vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
        fprintf(stderr, "%s\n", line);
        fflush(stderr);
        tt_dist_abort(code);  // ends every rank (mpirun reports the code); does not return
    }
    tt_dist_finalize();
    exit(code);
}

// Bad input: one line naming the problem and the fix, exit 2.
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
static void die_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie(2, fmt, ap);
}

// A failure while running (I/O, a diverging loss): one line, exit 1.
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie(1, fmt, ap);
}

// ---- command-line flags ----

enum {
    CMD_TRAIN = 1, CMD_SAMPLE = 2, CMD_EVAL = 4,  // char_gpt's and gpt's
    CMD_TOKENIZE = 8, CMD_ENCODE = 16, CMD_DECODE = 32, CMD_BPE_TRAIN = 64, CMD_EXPORT = 128,
};
#define CMD_ANY 255
#define CMD_TOKENS (CMD_TOKENIZE | CMD_ENCODE | CMD_DECODE)  // the tokenizer tools
typedef enum flag_kind { F_INT, F_FLOAT, F_STR, F_BOOL } flag_kind;

typedef struct options {
    // train, eval
    const char *data, *out, *resume, *log;
    tt_gpt_config cfg;  // the model flags (the field table's), vocab_size from the data
    int64_t batch, iters, decay_iters, warmup;
    int64_t eval_every, eval_iters, seed, threads;
    int64_t grad_accum;  // micro-batches per step on each rank
    double lr, min_lr, weight_decay, beta2, grad_clip;
    // sample
    const char *ckpt, *prompt;
    int64_t tokens, top_k, window;
    double temperature, top_p;
    bool no_cache;
    // gpt only
    const char *tokenizer, *preset, *init_from, *dtype;
    int64_t merges;
    // train: "f32" or "bf16" (autocast of the products)
    const char *precision;
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

typedef struct flag {
    const char *name;
    flag_kind kind;
    void *dst;
    int cmds;
    bool given;
    bool gpt_only;  // not a char_gpt flag
} flag;

static options opt;
static flag flags[] = {
    {"--data", F_STR, &opt.data, CMD_TRAIN | CMD_EVAL | CMD_TOKENS | CMD_BPE_TRAIN, false, 0},
    {"--out", F_STR, &opt.out, CMD_TRAIN | CMD_BPE_TRAIN | CMD_EXPORT, false, 0},
    {"--resume", F_STR, &opt.resume, CMD_TRAIN, false, 0},
    {"--log", F_STR, &opt.log, CMD_TRAIN, false, 0},
    // train's model flags are the config table's (tt_gpt_fields); sample's --block is this:
    {"--block", F_INT, &opt.window, CMD_SAMPLE, false, 0},
    {"--batch", F_INT, &opt.batch, CMD_TRAIN | CMD_EVAL, false, 0},
    {"--iters", F_INT, &opt.iters, CMD_TRAIN, false, 0},
    {"--decay-iters", F_INT, &opt.decay_iters, CMD_TRAIN, false, 0},
    {"--lr", F_FLOAT, &opt.lr, CMD_TRAIN, false, 0},
    {"--min-lr", F_FLOAT, &opt.min_lr, CMD_TRAIN, false, 0},
    {"--warmup", F_INT, &opt.warmup, CMD_TRAIN, false, 0},
    {"--weight-decay", F_FLOAT, &opt.weight_decay, CMD_TRAIN, false, 0},
    {"--beta2", F_FLOAT, &opt.beta2, CMD_TRAIN, false, 0},
    {"--grad-clip", F_FLOAT, &opt.grad_clip, CMD_TRAIN, false, 0},
    {"--eval-every", F_INT, &opt.eval_every, CMD_TRAIN, false, 0},
    {"--eval-iters", F_INT, &opt.eval_iters, CMD_TRAIN | CMD_EVAL, false, 0},
    {"--seed", F_INT, &opt.seed, CMD_TRAIN | CMD_SAMPLE | CMD_EVAL, false, 0},
    {"--threads", F_INT, &opt.threads, CMD_TRAIN | CMD_SAMPLE | CMD_EVAL, false, 0},
    {"--ckpt", F_STR, &opt.ckpt, CMD_SAMPLE | CMD_EVAL | CMD_TOKENS | CMD_EXPORT, false, 0},
    {"--prompt", F_STR, &opt.prompt, CMD_SAMPLE, false, 0},
    {"--tokens", F_INT, &opt.tokens, CMD_SAMPLE, false, 0},
    {"--temperature", F_FLOAT, &opt.temperature, CMD_SAMPLE, false, 0},
    {"--top-k", F_INT, &opt.top_k, CMD_SAMPLE, false, 0},
    {"--top-p", F_FLOAT, &opt.top_p, CMD_SAMPLE, false, 0},
    {"--no-cache", F_BOOL, &opt.no_cache, CMD_SAMPLE, false, 0},
    {"--tokenizer", F_STR, &opt.tokenizer, CMD_TRAIN | CMD_SAMPLE | CMD_EVAL | CMD_TOKENS,
     false, 1},
    {"--preset", F_STR, &opt.preset, CMD_TRAIN, false, 1},
    {"--init-from", F_STR, &opt.init_from, CMD_TRAIN | CMD_SAMPLE | CMD_EVAL, false, 1},
    {"--merges", F_INT, &opt.merges, CMD_BPE_TRAIN, false, 1},
    {"--dtype", F_STR, &opt.dtype, CMD_EXPORT, false, 1},
    {"--precision", F_STR, &opt.precision, CMD_TRAIN, false, 0},
    {"--quantize", F_STR, &opt.quantize, CMD_SAMPLE | CMD_EVAL, false, 0},
    // ---- profiling ----
    {"--profile", F_BOOL, &opt.profile, CMD_TRAIN, false, 0},
    {"--trace", F_STR, &opt.trace, CMD_TRAIN, false, 0},
    {"--grad-accum", F_INT, &opt.grad_accum, CMD_TRAIN, false, 0},
    // ---- the all-reduce overlapped with the backward ----
    {"--overlap", F_BOOL, &opt.overlap, CMD_TRAIN, false, 0},
    {"--bucket", F_INT, &opt.bucket, CMD_TRAIN, false, 0},
};
#define NFLAGS ((int)(sizeof flags / sizeof flags[0]))
#define MAX_FIELDS 64
static bool cfg_given[MAX_FIELDS];  // by index in tt_gpt_fields
static bool flag_ckpt[NFLAGS];      // by index in flags: read from the checkpoint ckpt_src

// The flag of this name for the commands in cmds; NULL when none.
static flag *find_flag(const char *name, int cmds) {
    for (int i = 0; i < NFLAGS; i++)
        if ((flags[i].cmds & cmds) && strcmp(flags[i].name, name) == 0 &&
            !(flags[i].gpt_only && prog->char_only))
            return &flags[i];
    return NULL;
}

// The index of the config field whose flag is name (train only); -1 when none.
static int find_cfg_flag(const char *name) {
    for (int i = 0; i < tt_gpt_nfields; i++)
        if (tt_gpt_fields[i].flag && strcmp(tt_gpt_fields[i].flag, name) == 0) return i;
    return -1;
}

// Whether the user gave a flag (of the running command).
static int running_cmd;
static bool given(const char *name) {
    int i = running_cmd == CMD_TRAIN ? find_cfg_flag(name) : -1;
    if (i >= 0) return cfg_given[i];
    flag *f = find_flag(name, running_cmd);
    return f && f->given;
}

// The usage text; its model flags come from the config's field table (gpt_flags.c).
static void print_usage(FILE *fp) {
    fputs(prog->char_only ? char_usage_head : gpt_usage_head, fp);
    gpt_usage_model_flags(fp, prog->char_only ? "                 " : "            ");
    fputs(prog->char_only ? char_usage_tail : gpt_usage_tail, fp);
}

static void set_defaults(void) {
    memset(&opt, 0, sizeof opt);
    opt.data = DEFAULT_DATA;
    opt.cfg = tt_gpt_config_default();
    opt.batch = 12;
    opt.iters = 2000;
    opt.decay_iters = 0;  // --iters
    opt.lr = 1e-3;
    opt.min_lr = 1e-4;
    opt.warmup = 100;
    opt.weight_decay = 0.1;
    opt.beta2 = 0.99;
    opt.grad_clip = 1.0;
    opt.eval_every = 250;
    opt.eval_iters = 20;
    opt.seed = 1337;
    opt.grad_accum = 1;
    opt.bucket = (int64_t)TT_DIST_BUCKET;
    opt.precision = "f32";
    opt.threads = 0;  // OpenMP's default
    opt.prompt = "\n";
    opt.tokens = 500;
    opt.top_k = 200;
    opt.temperature = 0.8;
    opt.top_p = 1.0;
}

// ---- the numeric flags' ranges (gpt_flags.c; the model flags': the field table's) ----
static const char *ckpt_src;  // the checkpoint the flags marked in flag_ckpt were read from
static void field_range(const tt_gpt_field *f, int64_t *lo, int64_t *hi);

static gpt_range range_of(const char *name) {
    int ci = running_cmd == CMD_TRAIN ? find_cfg_flag(name) : -1;
    int64_t lo, hi;
    if (ci < 0) return gpt_flag_range(name, MAX_BLOCK);
    if (tt_gpt_fields[ci].type == TT_GPT_FIELD_F64)
        return (gpt_range){name, tt_gpt_fields[ci].lo, tt_gpt_fields[ci].hi, "[)"};
    field_range(&tt_gpt_fields[ci], &lo, &hi);
    return (gpt_range){name, (double)lo, (double)hi, "[]"};
}

// Where flag name's value came from, for messages: "" when given (" (given)" with say_given),
// " (the default)", or " (from the checkpoint PATH)".
static const char *origin(const char *name, bool say_given) {
    static char buf[2][4200];
    static int k;
    flag *f = find_flag(name, running_cmd);
    if (given(name)) return say_given ? " (given)" : "";
    if (!(f && flag_ckpt[f - flags]) && !(opt.resume && find_cfg_flag(name) >= 0))
        return " (the default)";
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], " (from the checkpoint %s)", ckpt_src);
    return buf[k];
}

// Exits with one line when v (shown as text) is outside flag name's range.
static void check_range(const char *name, double v, const char *text, bool is_int) {
    char msg[8192];
    gpt_range r = range_of(name);
    if (!gpt_range_has(r, v))
        die_usage("%s", gpt_range_message(r, text, origin(name, false), given(name), is_int,
                                          msg, sizeof msg));
}

// check_range on the value flag name holds now (a model flag's when training).
static void check_flag(const char *name) {
    char text[64];
    int ci = running_cmd == CMD_TRAIN ? find_cfg_flag(name) : -1;
    flag *f = ci < 0 ? find_flag(name, running_cmd) : NULL;
    bool is_int = f ? f->kind == F_INT : tt_gpt_fields[ci].type == TT_GPT_FIELD_I64;
    double v = !f ? tt_gpt_field_get(&opt.cfg, &tt_gpt_fields[ci])
                  : is_int ? (double)*(int64_t *)f->dst : *(double *)f->dst;
    if (!f) tt_gpt_field_format(&opt.cfg, &tt_gpt_fields[ci], text, sizeof text);
    else if (is_int) snprintf(text, sizeof text, "%lld", (long long)*(int64_t *)f->dst);
    else snprintf(text, sizeof text, "%g", v);
    check_range(name, v, text, is_int);
}

// Marks flag name's value as read from checkpoint path, and checks its range.
static void from_ckpt(const char *name, const char *path) {
    flag_ckpt[find_flag(name, running_cmd) - flags] = true;
    ckpt_src = path;
    check_flag(name);
}

// Parses the value v of flag name into dst (an int64_t, a double or a string), within its
// range: an integer beyond int64 or a real beyond a double is out of it, a denormal is a number.
static void parse_value(const char *name, flag_kind kind, void *dst, const char *v) {
    if (kind == F_STR) *(const char **)dst = v;
    if (kind != F_INT && kind != F_FLOAT) return;
    double x = gpt_parse_number(v, kind == F_INT, dst, dst);
    if (isnan(x))
        die_usage("%s expects %s, got '%s'; e.g. %s %s", name,
                  kind == F_INT ? "an integer" : "a number", v, name, kind == F_INT ? "4" : "0.5");
    check_range(name, x, v, kind == F_INT);
}

// A flag given twice takes its last value.
static void parse_args(int argc, char **argv, int cmd, const char *cmd_name) {
    running_cmd = cmd;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_usage(stdout);
            exit(0);
        }
        flag *f = find_flag(a, cmd);
        int ci = cmd == CMD_TRAIN ? find_cfg_flag(a) : -1;
        if (ci >= 0) {  // a model flag: the field table parses it
            const tt_gpt_field *cf = &tt_gpt_fields[ci];
            cfg_given[ci] = true;
            if (cf->type == TT_GPT_FIELD_BOOL) {
                tt_gpt_field_set(&opt.cfg, cf, strncmp(a, "--no-", 5) != 0);
                continue;
            }
            if (i + 1 >= argc) die_usage("%s needs a value; e.g. %s --help", a, prog->name);
            union { int64_t i; double d; } x;  // a number: parsed and checked as a flag's
            if (cf->type == TT_GPT_FIELD_I64 || cf->type == TT_GPT_FIELD_F64) {
                bool i64 = cf->type == TT_GPT_FIELD_I64;
                parse_value(a, i64 ? F_INT : F_FLOAT, &x, argv[++i]);
                tt_gpt_field_set(&opt.cfg, cf, i64 ? (double)x.i : x.d);
            } else if (tt_gpt_field_parse(&opt.cfg, cf, argv[++i]) != TT_OK) {
                die_usage("%s", tt_last_error());
            }
            continue;
        }
        if (!f && (find_flag(a, CMD_ANY) || find_cfg_flag(a) >= 0))
            die_usage("%s does not apply to '%s'; run %s --help for its flags", a, cmd_name,
                      prog->name);
        if (!f)
            die_usage("unknown flag '%s' for '%s'; run %s --help for the flags", a, cmd_name,
                      prog->name);
        f->given = true;
        if (f->kind == F_BOOL) {
            *(bool *)f->dst = true;
            continue;
        }
        if (i + 1 >= argc) die_usage("%s needs a value; e.g. %s --help", a, prog->name);
        parse_value(f->name, f->kind, f->dst, argv[++i]);
    }
}

// --threads (given: checked when parsed; else 0, OpenMP's default) and --precision.
static void set_threads(void) {
    tt_precision prec;
    if (!tt_precision_parse(opt.precision, &prec))
        die_usage("--precision '%s' is not f32 nor bf16", opt.precision);
#ifdef _OPENMP
    if (opt.threads > 0) omp_set_num_threads((int)opt.threads);
#endif
}

static int nthreads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// ---- small helpers ----

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// mkdir -p of the directory part of path.
static void make_parent_dirs(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        die_usage("--out path is too long (%zu bytes)", strlen(path));
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return;
    *slash = 0;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            die("cannot create directory '%s' for --out: %s; pick another --out", buf,
                strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        die("cannot create directory '%s' for --out: %s; pick another --out", buf,
            strerror(errno));
}

static const char *best_path(void);

// Refuses, before any work, an output (--out, its .best, --log, --trace) that would replace an
// input or another output, is a directory, FIFO or device, or cannot be written; mkdir -p of
// --out's directory first.
static void check_outputs(int cmd) {
    const char *tok = opt.tokenizer;
    bool tok_file = tok && strcmp(tok, "gpt2") != 0 && strcmp(tok, "char") != 0;
    tt_file_role ins[] = {
        {"--data", cmd & (CMD_TRAIN | CMD_BPE_TRAIN) ? opt.data : NULL, false, false},
        {"--resume", opt.resume, false, true},  // continued in place
        {"--init-from", opt.init_from, false, false},
        {"--ckpt", opt.ckpt, false, false},
        {"--tokenizer", tok_file ? tok : NULL, false, false},
    };
    tt_file_role outs[] = {
        {"--out", opt.out, false, cmd == CMD_TRAIN},  // may be --resume's file
        {"--out's best file", cmd == CMD_TRAIN ? best_path() : NULL, false, true},
        {"--log", opt.log, true, false},
        {"--trace", opt.trace, false, false},
    };
    size_t n = strlen(opt.out);
    if (n > 0 && opt.out[n - 1] != '/') make_parent_dirs(opt.out);
    tt_status st = tt_file_check_outputs(outs, 4, ins, 5);
    if (st == TT_ERR_ARG) die_usage("%s", tt_last_error());
    if (st != TT_OK) die("%s", tt_last_error());
}

// ---- tokenizers ----

typedef enum tok_kind { TOK_CHAR, TOK_GPT2, TOK_FILE } tok_kind;

// A char vocab (from the training text), GPT-2's BPE, or a vocab of `gpt bpe-train`.
typedef struct tokenizer {
    tok_kind kind;
    tt_char_vocab vocab;   // TOK_CHAR
    tt_bpe bpe;            // TOK_GPT2, TOK_FILE
    unsigned char *file;   // TOK_FILE: the vocab file's bytes, kept whole in checkpoints
    size_t file_len;
    int64_t n_vocab;       // ids are [0, n_vocab)
} tokenizer;

static void tok_free(tokenizer *t) {
    tt_bpe_free(&t->bpe);
    free(t->file);
    memset(t, 0, sizeof *t);
}

static const char *tok_name(const tokenizer *t) {
    return t->kind == TOK_CHAR ? "char" : t->kind == TOK_GPT2 ? "gpt2" : "file";
}

// GPT-2's tokenizer from its files; what names who asked for it in the message of a failure.
static void tok_gpt2(tokenizer *t, const char *what) {
    memset(t, 0, sizeof *t);
    t->kind = TOK_GPT2;
    if (tt_bpe_load_gpt2(&t->bpe, GPT2_ENCODER, GPT2_MERGES) != TT_OK)
        die_usage("%s: %s", what, tt_last_error());
    t->n_vocab = t->bpe.n_vocab;
}

// A trained vocab from its file's bytes (kept in a checkpoint): tt_bpe_load reads a path, so
// they go through a temporary file.
static tt_status tok_from_bytes(tokenizer *t, const unsigned char *b, size_t n) {
    memset(t, 0, sizeof *t);
    const char *dir = getenv("TMPDIR");
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/gpt-vocab-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0) return tt_set_error(TT_ERR_IO, "cannot create a temporary file in %s: %s",
                                    dir && *dir ? dir : "/tmp", strerror(errno));
    bool ok = write(fd, b, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    tt_status st = ok ? tt_bpe_load(&t->bpe, tmp)
                      : tt_set_error(TT_ERR_IO, "cannot write the temporary file '%s'", tmp);
    unlink(tmp);
    if (st != TT_OK) return st;
    t->kind = TOK_FILE;
    t->n_vocab = t->bpe.n_vocab;
    t->file = malloc(n ? n : 1);
    if (!t->file) die("out of memory");
    memcpy(t->file, b, n);
    t->file_len = n;
    return TT_OK;
}

// --tokenizer NAME: gpt2, or a vocab file. char is not opened here (its vocab comes from the
// text: load_data).
static void tok_open(tokenizer *t, const char *name) {
    if (strcmp(name, "gpt2") == 0) {
        tok_gpt2(t, "--tokenizer gpt2");
        return;
    }
    memset(t, 0, sizeof *t);
    struct stat st;
    if (stat(name, &st) != 0)
        die_usage("--tokenizer '%s' is not char, gpt2 nor a readable vocab file (%s); pass one "
                  "of them, e.g. a vocab written by gpt bpe-train", name, strerror(errno));
    if (tt_bpe_load(&t->bpe, name) != TT_OK ||
        tt_read_file(name, &t->file, &t->file_len) != TT_OK)
        die_usage("--tokenizer: %s; pass char, gpt2 or a vocab written by gpt bpe-train",
                  tt_last_error());
    t->kind = TOK_FILE;
    t->n_vocab = t->bpe.n_vocab;
}

// The ids of text[0 .. n) into a new array (free it; *n_out ids). A byte the char vocab lacks
// exits: "<what>: <the byte and its position><of>; <fix>".
static int32_t *tok_encode(tokenizer *t, const char *text, size_t n, size_t *n_out,
                           const char *what, const char *of, const char *fix) {
    int32_t *ids;
    if (t->kind == TOK_CHAR) {
        ids = malloc((n ? n : 1) * sizeof *ids);
        if (!ids) die("out of memory");
        if (tt_vocab_encode(&t->vocab, text, n, ids) != TT_OK)
            die_usage("%s: %s%s; %s", what, tt_last_error(), of, fix);
        *n_out = n;
        return ids;
    }
    int32_t *b = tt_bpe_encode(&t->bpe, text, n, TT_BPE_ORDINARY, n_out);
    ids = malloc((*n_out ? *n_out : 1) * sizeof *ids);
    if (!ids) die("out of memory");
    if (*n_out) memcpy(ids, b, *n_out * sizeof *ids);
    tt_free(b);
    return ids;
}

// Writes the bytes of one token (id in range) to fp.
static void tok_write(const tokenizer *t, int32_t id, FILE *fp) {
    if (t->kind == TOK_CHAR) {
        char c;
        tt_vocab_decode(&t->vocab, &id, 1, &c);
        fputc(c, fp);
        return;
    }
    size_t len;
    const unsigned char *b = tt_bpe_token(&t->bpe, id, &len);
    fwrite(b, 1, len, fp);
}

// Checkpoint entries: "tokenizer" = char | gpt2 | file, with the char vocab in "vocab" (as
// char_gpt always wrote it) and a trained vocab's file in "tokenizer.vocab".
static void tok_to_ckpt(const tokenizer *t, tt_checkpoint *ck) {
    const char *name = tok_name(t);
    tt_ckpt_set_bytes(ck, "tokenizer", name, strlen(name));
    if (t->kind == TOK_CHAR)
        tt_ckpt_set_bytes(ck, "vocab", t->vocab.chars, (size_t)t->vocab.size);
    if (t->kind == TOK_FILE) tt_ckpt_set_bytes(ck, "tokenizer.vocab", t->file, t->file_len);
}

// The tokenizer a checkpoint was trained with (no "tokenizer" key: char, as old files).
static void tok_from_ckpt(tokenizer *t, const tt_checkpoint *ck, const char *path) {
    memset(t, 0, sizeof *t);
    const unsigned char *b;
    size_t n;
    bool has = tt_ckpt_get_bytes(ck, "tokenizer", &b, &n);
    if (!has || (n == 4 && memcmp(b, "char", 4) == 0)) {
        if (!tt_ckpt_get_bytes(ck, "vocab", &b, &n) ||
            tt_vocab_from_chars(&t->vocab, b, n > 256 ? 0 : (int)n) != TT_OK)
            die("checkpoint '%s' has no valid 'vocab' (%s)", path, tt_last_error());
        t->kind = TOK_CHAR;
        t->n_vocab = t->vocab.size;
    } else if (n == 4 && memcmp(b, "gpt2", 4) == 0) {
        char what[4200];
        snprintf(what, sizeof what, "checkpoint '%s' (trained on GPT-2 tokens)", path);
        tok_gpt2(t, what);
    } else if (n == 4 && memcmp(b, "file", 4) == 0) {
        if (!tt_ckpt_get_bytes(ck, "tokenizer.vocab", &b, &n))
            die("checkpoint '%s' has no 'tokenizer.vocab'; it was not written by %s train",
                path, prog->name);
        if (tok_from_bytes(t, b, n) != TT_OK)
            die("checkpoint '%s': its tokenizer.vocab: %s", path, tt_last_error());
    } else {
        die("checkpoint '%s': unknown tokenizer '%.*s'; it was written by a newer program",
            path, (int)(n > 40 ? 40 : n), (const char *)b);
    }
}

// ---- checkpoint contents ----

typedef struct train_state {
    tt_gpt_config cfg;
    tokenizer tok;
    tt_gpt_state st;     // step, data stream, best / last eval losses
    int64_t saved_step;  // step of the last file this run wrote to --out; -1 before
    // Micro-batches per step over all ranks, and the streams of slots 1 .. micro_batches - 1
    // (slot_bytes; slot 0's are st.data_rng and the model's dropout stream): see "micro-batch
    // slots" below.
    int64_t micro_batches;
    unsigned char *slot_bytes;
} train_state;

// ---- micro-batch slots ----
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

// The fresh streams of slot g >= 1, from --seed (slot 0's come from the model and
// train_data_seed).
static void slot_seed(slot_rngs *r, int64_t seed, int64_t g) {
    tt_rng_seed(&r->data, ((uint64_t)seed ^ 0xDA7A5EEDull) + (uint64_t)g * 0x9E3779B97F4A7C15ull);
    tt_rng_seed(&r->drop, ((uint64_t)seed ^ 0xD80F0D7ull) + (uint64_t)g * 0xBF58476D1CE4E5B9ull);
}

static void slot_pack(unsigned char *b, const slot_rngs *r) {
    const tt_rng *two[2] = {&r->data, &r->drop};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) *b++ = (unsigned char)(two[k]->s[i] >> (8 * j));
}

static void slot_unpack(slot_rngs *r, const unsigned char *b) {
    tt_rng *two[2] = {&r->data, &r->drop};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++) {
            uint64_t v = 0;
            for (int j = 0; j < 8; j++) v |= (uint64_t)*b++ << (8 * j);
            two[k]->s[i] = v;
        }
}

// The GPT checkpoint (models/gpt: config, model, optimizer, training state) plus this program's
// entries: the tokenizer and the training flags --resume and eval read back.
static void ckpt_fill(tt_checkpoint *ck, const train_state *s, const tt_gpt *gpt,
                      const tt_optim *o, const char *data_path) {
    tt_gpt_ckpt_fill(ck, gpt, o, &s->st);
    tok_to_ckpt(&s->tok, ck);
    tt_ckpt_set_bytes(ck, "train.data", data_path, strlen(data_path));
    tt_ckpt_set_i64(ck, "train.iters", opt.iters);
    tt_ckpt_set_i64(ck, "train.decay_iters", opt.decay_iters);
    tt_ckpt_set_i64(ck, "train.warmup", opt.warmup);
    tt_ckpt_set_f64(ck, "train.lr", opt.lr);
    tt_ckpt_set_f64(ck, "train.min_lr", opt.min_lr);
    tt_ckpt_set_f64(ck, "train.weight_decay", opt.weight_decay);
    tt_ckpt_set_f64(ck, "train.beta2", opt.beta2);
    tt_ckpt_set_f64(ck, "train.grad_clip", opt.grad_clip);
    tt_ckpt_set_i64(ck, "train.batch", opt.batch);
    tt_ckpt_set_i64(ck, "train.eval_every", opt.eval_every);
    tt_ckpt_set_i64(ck, "train.eval_iters", opt.eval_iters);
    tt_ckpt_set_i64(ck, "train.seed", opt.seed);
    tt_ckpt_set_bytes(ck, "train.precision", opt.precision, strlen(opt.precision));
    tt_ckpt_set_i64(ck, "train.grad_accum", opt.grad_accum);
    tt_ckpt_set_i64(ck, "train.ranks", tt_dist_world_size());
    tt_ckpt_set_i64(ck, "train.micro_batches", s->micro_batches);
    if (s->micro_batches > 1)
        tt_ckpt_set_bytes(ck, "train.rng_slots", s->slot_bytes,
                          (size_t)(s->micro_batches - 1) * SLOT_BYTES);
}

// Reads an i64 entry within [lo, hi] or exits naming the key.
static int64_t ck_i64(const tt_checkpoint *ck, const char *path, const char *key, int64_t lo,
                      int64_t hi) {
    int64_t v;
    if (!tt_ckpt_get_i64(ck, key, &v))
        die("checkpoint '%s' has no integer '%s'; it was not written by %s train", path,
            key, prog->name);
    if (v < lo || v > hi)
        die("checkpoint '%s': %s = %lld is outside [%lld, %lld]; the file is not a valid "
            "%s checkpoint", path, key, (long long)v, (long long)lo, (long long)hi, prog->name);
    return v;
}

static double ck_f64(const tt_checkpoint *ck, const char *path, const char *key) {
    double v;
    if (!tt_ckpt_get_f64(ck, key, &v))
        die("checkpoint '%s' has no number '%s'; it was not written by %s train", path,
            key, prog->name);
    return v;
}

// This program's caps on a config (a GPT on a CPU), beyond the field table's ranges; they also
// bound what a checkpoint may ask us to allocate: the causal mask alone is block^2 ints per
// layer. char_gpt's vocab is at most 256.
static const struct { const char *name; int64_t lo, hi; } caps[] = {
    {"vocab_size", 1, MAX_VOCAB}, {"block_size", 1, MAX_BLOCK}, {"n_layer", 1, MAX_LAYERS},
    {"n_head", 1, MAX_HEADS},     {"n_kv_head", 1, MAX_HEADS},  {"n_embd", 1, MAX_EMBD},
};

// The [lo, hi] of an integer field: the table's range within this program's cap.
static void field_range(const tt_gpt_field *f, int64_t *lo, int64_t *hi) {
    *lo = (int64_t)f->lo;
    *hi = (int64_t)f->hi;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        if (strcmp(caps[i].name, f->name) == 0) {
            if (caps[i].lo > *lo) *lo = caps[i].lo;
            if (caps[i].hi < *hi) *hi = caps[i].hi;
        }
    if (prog->char_only && strcmp(f->name, "vocab_size") == 0 && *hi > 256) *hi = 256;
}

// Loads a checkpoint and reads its config, vocab and training state, validating them; exits on
// any error.
static void load_ckpt(tt_checkpoint *ck, const char *path, train_state *s) {
    if (tt_ckpt_load(ck, path) != TT_OK)
        die("%s; pass a checkpoint written by %s train", tt_last_error(), prog->name);
    memset(s, 0, sizeof *s);
    tt_gpt_config *c = &s->cfg;
    if (tt_gpt_ckpt_config(ck, c) != TT_OK)
        die("checkpoint '%s': %s; pass a checkpoint written by %s train", path,
            tt_last_error(), prog->name);
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        int64_t lo, hi, v = (int64_t)tt_gpt_field_get(c, f);
        if (f->type != TT_GPT_FIELD_I64) continue;
        field_range(f, &lo, &hi);
        if (v < lo || v > hi)
            die("checkpoint '%s': cfg.%s = %lld is outside [%lld, %lld], the sizes %s "
                "handles", path, f->name, (long long)v, (long long)lo, (long long)hi,
                prog->name);
    }
    tok_from_ckpt(&s->tok, ck, path);
    if (s->tok.kind != TOK_CHAR && prog->char_only)
        die("checkpoint '%s' was trained on %s tokens, not characters; use gpt, not %s", path,
            tok_name(&s->tok), prog->name);
    if (s->tok.n_vocab > c->vocab_size)  // a larger cfg.vocab_size is a padded vocab
        die("checkpoint '%s': its %s tokenizer has %lld ids but cfg.vocab_size is %lld", path,
            tok_name(&s->tok), (long long)s->tok.n_vocab, (long long)c->vocab_size);
    if (tt_gpt_ckpt_state(ck, &s->st) != TT_OK)
        die("checkpoint '%s': %s; it was not written by %s train", path, tt_last_error(),
            prog->name);
}

// Builds the model of the checkpoint's config with its parameters and dropout stream.
static void model_from_ckpt(tt_gpt *gpt, const tt_checkpoint *ck, const char *path) {
    if (tt_gpt_ckpt_model(gpt, ck) != TT_OK)
        die("checkpoint '%s': %s", path, tt_last_error());
}

// ---- loss estimates ----

// The eval batches of a split come from their own stream seeded by --seed, so evals never
// disturb the training batches (resume stays exact) and every eval sees the same batches.
static void eval_rng(tt_rng *r, int64_t seed, tt_data_split split) {
    tt_rng_seed(r, (uint64_t)seed * 0x9E3779B97F4A7C15ull + 0x5EED0000ull + (uint64_t)split);
}

static double estimate_split(tt_gpt *gpt, const tt_text_dataset *ds, tt_data_split split,
                             int64_t batch, int64_t block, int64_t iters, int64_t seed) {
    bool grad = tt_set_grad_enabled(false), training = gpt->drop.training;
    tt_gpt_train(gpt, false);
    tt_rng r;
    eval_rng(&r, seed, split);
    // With several ranks, batch i is rank i % ranks's (every rank draws every batch to keep
    // the stream); the losses are summed over the ranks (each has zeros at the others'
    // places, so the sum is exact) and added up in order: the same bits on any number of ranks.
    int rank = tt_dist_rank(), ranks = tt_dist_world_size();
    double *losses = calloc((size_t)iters, sizeof *losses), sum = 0;
    if (!losses) die("out of memory");
    for (int64_t i = 0; i < iters; i++) {
        tt_scope_begin();
        tt_tensor *x, *y;
        tt_dataset_batch(ds, split, batch, block, &r, &x, &y);
        if (i % ranks == rank) losses[i] = tt_item(tt_gpt_loss(gpt, x, y));
        tt_scope_end();
    }
    if (tt_dist_allreduce_f64(losses, (size_t)iters) != TT_OK)
        die("evaluation: %s", tt_last_error());
    for (int64_t i = 0; i < iters; i++) sum += losses[i];
    free(losses);
    tt_gpt_train(gpt, training);
    tt_set_grad_enabled(grad);
    return sum / (double)iters;
}

// The byte offset where the first frac of text's characters end (UTF-8: a byte 10xxxxxx does
// not start a character): nanoGPT's data[:int(n * 0.9)] on the decoded text.
static size_t char_split(const unsigned char *text, size_t n, double frac) {
    size_t chars = 0, seen = 0;
    for (size_t i = 0; i < n; i++) chars += (text[i] & 0xC0) != 0x80;
    size_t want = (size_t)((double)chars * frac);
    for (size_t i = 0; i < n; i++)
        if ((text[i] & 0xC0) != 0x80 && seen++ == want) return i;
    return n;
}

// Exits with the message of a --data file that cannot be read.
static void data_error(tt_status s, const char *path) {
    const char *e = tt_last_error();
    if (strcmp(path, DEFAULT_DATA) == 0 && s == TT_ERR_IO)
        die_usage("--data: %s; run `make data` to fetch it, or pass --data FILE", e);
    if (strchr(e, ';')) die_usage("--data: %s", e);
    die_usage("--data: %s; pass a readable text file", e);
}

// A BPE dataset: the text split 90/10 by characters, each part encoded on its own (nanoGPT's
// prepare.py for shakespeare).
static void load_bpe_data(tt_text_dataset *ds, const char *path, tokenizer *t) {
    unsigned char *text;
    size_t n;
    tt_status s = tt_read_file(path, &text, &n);
    if (s == TT_OK && n == 0) s = tt_set_error(TT_ERR_ARG, "'%s' is empty", path);
    if (s != TT_OK) data_error(s, path);
    size_t cut = char_split(text, n, TRAIN_FRAC), n_tr, n_va;
    int32_t *tr = tok_encode(t, (const char *)text, cut, &n_tr, "--data", "", "");
    int32_t *va = tok_encode(t, (const char *)text + cut, n - cut, &n_va, "--data", "", "");
    free(text);
    int32_t *all = malloc((n_tr + n_va + 1) * sizeof *all);
    if (!all) die("out of memory");
    memcpy(all, tr, n_tr * sizeof *all);
    memcpy(all + n_tr, va, n_va * sizeof *all);
    free(tr);
    free(va);
    if (tt_dataset_from_tokens(ds, all, (int64_t)(n_tr + n_va), (int64_t)n_tr) != TT_OK)
        die("--data '%s': %s", path, tt_last_error());
    free(all);
}

// Loads the dataset in t's tokens: a char vocab is built from the file when t->n_vocab is 0
// (and stored in t), else the file must be encodable with it. Checks both splits fit the block.
static void load_data(tt_text_dataset *ds, const char *path, tokenizer *t, int64_t block,
                      const char *fix) {
    if (t->kind != TOK_CHAR) {
        load_bpe_data(ds, path, t);
    } else {
        tt_status s = tt_dataset_load(ds, path, t->n_vocab ? &t->vocab : NULL, TRAIN_FRAC);
        if (s == TT_ERR_MISMATCH)
            die_usage("%s; %s", tt_last_error(), fix);
        if (s != TT_OK) data_error(s, path);
        t->vocab = ds->vocab;
        t->n_vocab = ds->vocab.size;
    }
    if (block > 0 && tt_dataset_check(ds, block) != TT_OK)
        die_usage("'%s': %s", path, tt_last_error());
}

// ---- progress ----

static void fmt_eta(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 359999) snprintf(buf, n, "--");
    else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%.0fs", s);
}

typedef struct progress {
    bool tty;
    double last_draw;
    bool drawn;  // a bar is on the line
} progress;

static void progress_clear(progress *p) {
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = false;
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

static void progress_step(progress *p, int64_t step, int64_t iters, double loss, double ms,
                          double tok_s) {
    char eta[32];
    fmt_eta(eta, sizeof eta, (double)(iters - step) * ms / 1000.0);
    if (p->tty) {
        double t = now_s();
        if (step != iters && t - p->last_draw < 0.1) return;
        p->last_draw = t;
        char line[256];
        progress_format(line, sizeof line, term_cols(), step, iters, loss, ms, tok_s, eta);
        fprintf(stderr, "\r\033[K%s", line);
        p->drawn = true;
    } else if (step == 1 || step % 50 == 0 || step == iters) {
        fprintf(stderr, "step %lld/%lld: loss %.4f, %.1f ms/step, %.0f tok/s, ETA %s\n",
                (long long)step, (long long)iters, loss, ms, tok_s, eta);
    }
    fflush(stderr);
}

// ---- train ----

// --out with .best before its extension (out/char_gpt.ckpt -> out/char_gpt.best.ckpt), or
// with .best appended when its name has no extension: the best state so far.
static const char *best_path(void) {
    static char buf[4200];
    const char *slash = strrchr(opt.out, '/'), *base = slash ? slash + 1 : opt.out;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base)
        snprintf(buf, sizeof buf, "%.*s.best%s", (int)(dot - opt.out), opt.out, dot);
    else
        snprintf(buf, sizeof buf, "%s.best", opt.out);
    return buf;
}

// Writes the state to --out (the last state), and when best to best_path() first: --out never
// records a best val loss that no file holds.
static void save_or_die(train_state *s, const tt_gpt *gpt, const tt_optim *o,
                        const char *data_path, progress *pg, bool best) {
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    ckpt_fill(&ck, s, gpt, o, data_path);
    tt_status st = best ? tt_ckpt_save(&ck, best_path()) : TT_OK;
    if (st == TT_OK) st = tt_ckpt_save(&ck, opt.out);
    if (st == TT_OK) s->saved_step = s->st.step;
    tt_ckpt_free(&ck);
    progress_clear(pg);
    if (st != TT_OK)
        die("%s; free disk space or pick another --out, then --resume (training stopped at "
            "step %lld)", tt_last_error(), (long long)s->st.step);
    fprintf(stderr, "saved %s (step %lld, val loss %.4f, params fingerprint %016llx)%s%s%s\n",
            opt.out, (long long)s->st.step, s->st.val_loss,
            (unsigned long long)tt_params_fingerprint(&gpt->params), best ? " and " : "",
            best ? best_path() : "", best ? " (the best so far)" : "");
}

// A diverged run stops before anything non-finite is saved: one line naming the step, what
// (e.g. "the loss is nan"), the fix, and what the files on disk hold.
static void die_diverged(const train_state *s, int64_t step, const char *what) {
    char kept[9000];
    if (s->saved_step >= 0)
        snprintf(kept, sizeof kept, "%s holds step %lld, %s the best state", opt.out,
                 (long long)s->saved_step, best_path());
    else
        snprintf(kept, sizeof kept, "nothing was saved in this run, %s is untouched", opt.out);
    die("step %lld: %s, training diverged; lower --lr (now %g) or raise --warmup (%s)",
        (long long)step, what, opt.lr, kept);
}

// Dies (die_diverged) unless the evaluated losses and every weight are finite.
static void check_finite(const train_state *s, const tt_gpt *gpt) {
    char what[300];
    const char *bad = tt_params_nonfinite(&gpt->params, NULL);
    if (!isfinite(s->st.train_loss) || !isfinite(s->st.val_loss))
        snprintf(what, sizeof what, "the eval %s loss is %g",
                 isfinite(s->st.train_loss) ? "val" : "train",
                 isfinite(s->st.train_loss) ? s->st.val_loss : s->st.train_loss);
    else if (bad)
        snprintf(what, sizeof what, "the weight '%s' holds NaN or Inf", bad);
    else
        return;
    die_diverged(s, s->st.step, what);
}

// ---- SIGINT, SIGTERM: the first ends training after the step (an eval and a save) ----

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

// SA_RESETHAND: a second one of the same signal kills at once. A signal ignored on entry (a
// background job of sh, nohup) stays ignored.
static void catch_stop_signals(void) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int sig = SIGINT; sig; sig = sig == SIGINT ? SIGTERM : 0)
        if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sig, &sa, NULL);
}

// After the save of the step the signal ended: one line, exit 128 + the signal (130, 143).
static void exit_on_signal(const train_state *s, FILE *log) {
    if (log) fclose(log);
    fprintf(stderr, "%s: stopped by %s at step %lld; %s holds it, continue with --resume %s\n",
            prog->name, stop_signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)s->st.step,
            opt.out, opt.out);
    tt_dist_finalize();
    exit(128 + stop_signal);
}

// Buffered writes fail late: checks the --log after each flush (a full disk, /dev/full).
static void check_log(FILE *log, const train_state *s) {
    if (fflush(log) == 0 && !ferror(log)) return;
    int e = errno;
    char kept[4400];
    if (s->saved_step >= 0)
        snprintf(kept, sizeof kept, "%s holds step %lld", opt.out, (long long)s->saved_step);
    else
        snprintf(kept, sizeof kept, "nothing was saved in this run");
    die("cannot write --log '%s': %s; free disk space or pick another --log (training stopped "
        "at step %lld; %s)", opt.log, strerror(e ? e : EIO), (long long)s->st.step, kept);
}

// stdout may be a full disk or a closed pipe too: a silent truncation would look like success.
static void check_stdout(void) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    int e = errno;
    die("cannot write to stdout: %s", strerror(e ? e : EIO));
}

// Without --data: the data file of the run that wrote the checkpoint, when it recorded one.
static void data_from_ckpt(const tt_checkpoint *ck) {
    static char data_path[4096];
    const unsigned char *b;
    size_t n;
    if (!given("--data") && tt_ckpt_get_bytes(ck, "train.data", &b, &n) && n > 0 &&
        n < sizeof data_path && !memchr(b, 0, n)) {
        memcpy(data_path, b, n);
        data_path[n] = 0;
        opt.data = data_path;
    }
}

// On --resume: each flag not given comes from the checkpoint; model flags given must match.
static void resume_flags(const tt_checkpoint *ck, const char *path, const train_state *s) {
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        double mine = tt_gpt_field_get(&opt.cfg, f), theirs = tt_gpt_field_get(&s->cfg, f);
        if (!f->flag || !cfg_given[i] || mine == theirs) continue;
        if (f->type == TT_GPT_FIELD_I64)
            die_usage("--resume: '%s' was trained with %s %lld, not %lld; leave out %s (it "
                      "comes from the checkpoint) or start a new run", path, f->flag,
                      (long long)theirs, (long long)mine, f->flag);
        die_usage("--resume: '%s' was trained with another %s; leave it out (it comes from "
                  "the checkpoint) or start a new run", path, f->flag);
    }
    opt.cfg = s->cfg;

    struct { const char *flag, *key; int64_t *dst; } ti[] = {
        {"--iters", "train.iters", &opt.iters},
        {"--decay-iters", "train.decay_iters", &opt.decay_iters},
        {"--warmup", "train.warmup", &opt.warmup}, {"--batch", "train.batch", &opt.batch},
        {"--eval-every", "train.eval_every", &opt.eval_every},
        {"--eval-iters", "train.eval_iters", &opt.eval_iters},
        {"--seed", "train.seed", &opt.seed},
    };
    // An --iters given without --decay-iters keeps the checkpoint's schedule.
    for (size_t i = 0; i < sizeof ti / sizeof ti[0]; i++)
        if (!given(ti[i].flag)) {
            *ti[i].dst = ck_i64(ck, path, ti[i].key, INT64_MIN, INT64_MAX);
            from_ckpt(ti[i].flag, path);
        }
    struct { const char *flag, *key; double *dst; } tf[] = {
        {"--lr", "train.lr", &opt.lr}, {"--min-lr", "train.min_lr", &opt.min_lr},
        {"--weight-decay", "train.weight_decay", &opt.weight_decay},
        {"--beta2", "train.beta2", &opt.beta2}, {"--grad-clip", "train.grad_clip", &opt.grad_clip},
    };
    for (size_t i = 0; i < sizeof tf / sizeof tf[0]; i++)
        if (!given(tf[i].flag)) {
            *tf[i].dst = ck_f64(ck, path, tf[i].key);
            from_ckpt(tf[i].flag, path);
        }
    // Micro-batches per step (a checkpoint from before them: 1). Their streams continue, so
    // the number of ranks may change as long as it divides them; --grad-accum follows.
    int64_t mb = 1, ranks = tt_dist_world_size();
    if (tt_ckpt_get_i64(ck, "train.micro_batches", &mb))
        mb = ck_i64(ck, path, "train.micro_batches", 1, 1 << 20);
    if (!given("--grad-accum") && mb % ranks != 0)
        die_usage("--resume: '%s' takes %lld micro-batches per step, which %lld ranks cannot "
                  "share; run a number of ranks that divides %lld", path, (long long)mb,
                  (long long)ranks, (long long)mb);
    if (!given("--grad-accum")) {
        opt.grad_accum = mb / ranks;
        from_ckpt("--grad-accum", path);
    }
    if (opt.grad_accum * ranks != mb)
        die_usage("--resume: '%s' takes %lld micro-batches per step, but %lld ranks x "
                  "--grad-accum %lld take %lld; leave out --grad-accum (it follows the number "
                  "of ranks) or start a new run", path, (long long)mb, (long long)ranks,
                  (long long)opt.grad_accum, (long long)(opt.grad_accum * ranks));
    // The precision of the products (a checkpoint from before the flag: f32).
    const unsigned char *pb;
    size_t pn;
    static char prec[8];
    if (!given("--precision") && tt_ckpt_get_bytes(ck, "train.precision", &pb, &pn)) {
        if (pn >= sizeof prec) pn = sizeof prec - 1;
        memcpy(prec, pb, pn);
        prec[pn] = 0;
        tt_precision p;
        if (!tt_precision_parse(prec, &p))
            die("checkpoint '%s': train.precision '%s' is not f32 nor bf16; it was written by "
                "a newer program", path, prec);
        opt.precision = prec;
    }
    data_from_ckpt(ck);
}

// A one-line note on stderr: a default was changed to fit a flag the user gave.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: note: ", prog->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void validate_train_flags(void) {
    tt_gpt_config *c = &opt.cfg;
    if (!given("--kv-heads") && !opt.resume) c->n_kv_head = c->n_head;  // plain multi-head
    for (int i = 0; i < tt_gpt_nfields; i++)  // each model flag within its range
        if (tt_gpt_fields[i].flag && tt_gpt_fields[i].type <= TT_GPT_FIELD_F64)
            check_flag(tt_gpt_fields[i].flag);
    if (opt.decay_iters == 0 && !given("--decay-iters")) opt.decay_iters = opt.iters;
    // A default never conflicts with a flag the user gave: it is lowered, with a note.
    if (opt.min_lr > opt.lr && !given("--min-lr") && !opt.resume) {
        note("--min-lr %g (the default) is above --lr %g; using --min-lr %g", opt.min_lr,
             opt.lr, opt.lr / 10);
        opt.min_lr = opt.lr / 10;
    }
    bool both = given("--min-lr") && given("--lr");
    if (opt.min_lr > opt.lr)
        die_usage("--min-lr %g%s must be at most --lr %g%s; %s --min-lr%s, e.g. --min-lr %g",
                  opt.min_lr, origin("--min-lr", !both), opt.lr, origin("--lr", !both),
                  given("--min-lr") ? "lower" : "give", given("--min-lr") ? "" : " too",
                  opt.lr / 10);
    if (c->n_embd % c->n_head != 0)
        die_usage("--embd %lld is not divisible by --heads %lld; pick --heads among the "
                  "divisors of --embd", (long long)c->n_embd, (long long)c->n_head);
    if (c->n_head % c->n_kv_head != 0)
        die_usage("--heads %lld is not divisible by --kv-heads %lld; pick --kv-heads among "
                  "the divisors of --heads", (long long)c->n_head, (long long)c->n_kv_head);
    if (c->positional == TT_POS_ROPE && (c->n_embd / c->n_head) % 2 != 0)
        die_usage("--pos rope needs an even head size, but --embd / --heads = %lld; change "
                  "--embd or --heads", (long long)(c->n_embd / c->n_head));
    const char *decay = given("--decay-iters") || opt.resume ? "--decay-iters" : "--iters";
    if (opt.warmup >= opt.decay_iters && !given("--warmup") && !opt.resume) {
        note("--warmup %lld (the default) is not below %s %lld; using --warmup %lld",
             (long long)opt.warmup, decay, (long long)opt.decay_iters,
             (long long)(opt.decay_iters / 10));
        opt.warmup = opt.decay_iters / 10;
    }
    both = given("--warmup") && given(decay);
    if (opt.warmup >= opt.decay_iters)  // the decay length: --decay-iters, by default --iters
        die_usage("--warmup %lld%s must be below %s %lld%s; %s --warmup%s, e.g. --warmup %lld",
                  (long long)opt.warmup, origin("--warmup", !both), decay,
                  (long long)opt.decay_iters, origin(decay, !both),
                  given("--warmup") ? "lower" : "give", given("--warmup") ? "" : " too",
                  (long long)(opt.decay_iters / 10));
}

// Whether path names a safetensors file (by its extension): --init-from reads it as GPT-2's.
static bool is_safetensors(const char *path) {
    size_t n = strlen(path);
    return n >= 12 && strcmp(path + n - 12, ".safetensors") == 0;
}

// A --tokenizer given with a checkpoint must be the one it was trained with.
static void tok_check_given(const tokenizer *t, const char *path) {
    if (!opt.tokenizer) return;
    bool same;
    if (strcmp(opt.tokenizer, "char") == 0 || strcmp(opt.tokenizer, "gpt2") == 0) {
        same = strcmp(opt.tokenizer, tok_name(t)) == 0;
    } else {
        unsigned char *b;
        size_t n;
        same = t->kind == TOK_FILE && tt_read_file(opt.tokenizer, &b, &n) == TT_OK &&
               n == t->file_len && memcmp(b, t->file, n) == 0;
        if (t->kind == TOK_FILE && same) free(b);
    }
    if (!same)
        die_usage("--tokenizer %s is not the tokenizer '%s' was trained with (%s); leave "
                  "--tokenizer out, it comes from the checkpoint", opt.tokenizer, path,
                  tok_name(t));
}

// Exits (1) with the estimate and the machine's memory when a run of c on (B, T) batches
// cannot fit, before it allocates.
static void check_memory(const tt_gpt_config *c, int64_t B, int64_t T, bool training) {
    if (tt_gpt_check_memory(c, B, T, training, training ? "training" : "this model") != TT_OK)
        die("%s; use a smaller --batch, --block or model", tt_last_error());
}

// The allocator's hook: a failed allocation is one line and exit 1, not an abort.
static void on_oom(const char *message, void *ctx) {
    (void)ctx;
    die("%s; use a smaller --batch, --block or model", message);
}

// The model (and tokenizer) of --init-from / --ckpt path: a checkpoint of train, with its
// tokenizer, or a GPT-2 .safetensors, with --tokenizer (default gpt2). ck receives the
// checkpoint when path is one (left empty otherwise); s its config, tokenizer and state.
static void load_model(const char *flagname, const char *path, tt_gpt *gpt, train_state *s,
                       tt_checkpoint *ck) {
    memset(s, 0, sizeof *s);
    tt_ckpt_init(ck);
    if (is_safetensors(path)) {
        if (opt.tokenizer && strcmp(opt.tokenizer, "char") == 0)
            die_usage("%s '%s': a safetensors file holds no char vocab; use --tokenizer gpt2 "
                      "or a vocab file", flagname, path);
        if (tt_gpt_load_hf(gpt, path, 0) != TT_OK)
            die_usage("%s: %s; pass a GPT-2 model.safetensors or a checkpoint of %s train",
                      flagname, tt_last_error(), prog->name);
        tok_open(&s->tok, opt.tokenizer ? opt.tokenizer : "gpt2");
        s->cfg = gpt->cfg;
        // Larger is a padded vocab (nanoGPT's 50304); smaller cannot score the tokenizer's ids
        // (sample needs only the prompt's within it: checked there).
        if (s->tok.n_vocab > s->cfg.vocab_size && running_cmd != CMD_SAMPLE)
            die_usage("%s '%s' has a vocabulary of %lld, fewer than the %lld ids of the %s "
                      "tokenizer; pass the tokenizer it was trained with", flagname, path,
                      (long long)s->cfg.vocab_size, (long long)s->tok.n_vocab,
                      tok_name(&s->tok));
        s->st.best_val_loss = INFINITY;
        s->st.train_loss = s->st.val_loss = NAN;
        return;
    }
    load_ckpt(ck, path, s);
    tok_check_given(&s->tok, path);
    model_from_ckpt(gpt, ck, path);
}

// The model flags the user gave (any field of the table); NULL when none.
static const char *model_flag_given(void) {
    for (int i = 0; i < tt_gpt_nfields; i++)
        if (cfg_given[i]) return tt_gpt_fields[i].flag;
    return NULL;
}

// One step's micro-batches on this rank (slots of A; M over all ranks; (B, T) tokens each):
// each takes its batch and dropout masks from its slot's streams, and the .grad of every
// parameter ends as the mean over all M micro-batches. Returns the mean loss over all M.
// The gradient sum runs micro-batch by micro-batch (accum holds it; the last is added into
// .grad), is divided by A, then summed over the ranks and divided by their number
// (tt_dist_allreduce_grads): 1 rank with A = 2 and 2 ranks with A = 1 both compute
// (g0 + g1) / 2, bit for bit.
// The last micro-batch's gradient of parameter i, as it becomes final during an overlapped
// backward (tt_dist_overlap_begin's prepare): (accum + g) / A in place, as micro_batches does
// after a blocking one.
typedef struct accum_prepare {
    const float *accum;
    const size_t *offset;  // per parameter: its first element in accum
    int64_t A;
    const tt_params *p;
} accum_prepare;

static void add_accum(int i, tt_tensor *g, void *ctx) {
    const accum_prepare *ap = ctx;
    if (g->dtype != TT_F32 || !tt_is_contiguous(g))
        die("internal error: --grad-accum needs a contiguous f32 gradient for '%s'",
            ap->p->items[i].name);
    float *d = tt_data(g);  // (numel)
    const float *s = ap->accum + ap->offset[i];
    size_t n = (size_t)tt_numel(g);
    for (size_t j = 0; j < n; j++) d[j] = (s[j] + d[j]) / (float)ap->A;
    tt_bump_version(g, "grad-accum");
}

static double micro_batches(tt_gpt *gpt, const tt_text_dataset *ds, slot_rngs *slots,
                            int64_t A, int64_t M, int64_t B, int64_t T, float *accum,
                            bool overlap) {
    const tt_params *p = &gpt->params;
    double sum = 0;
    size_t *offset = NULL;
    accum_prepare ap = {accum, NULL, A, p};
    if (overlap && A > 1) {
        offset = malloc((size_t)p->n * sizeof *offset);
        if (!offset) die("out of memory");
        size_t off = 0;
        for (int i = 0; i < p->n; i++) {
            offset[i] = off;
            off += (size_t)tt_numel(p->items[i].tensor);
        }
        ap.offset = offset;
    }
    for (int64_t a = 0; a < A; a++) {
        gpt->dropout_rng = slots[a].drop;
        tt_tensor *x, *y;
        tt_dataset_batch(ds, TT_SPLIT_TRAIN, B, T, &slots[a].data, &x, &y);  // (B, T) each
        tt_tensor *loss = tt_gpt_loss(gpt, x, y);
        sum += tt_item(loss);
        // Overlapped: the last backward starts the all-reduce (and adds accum as it goes).
        bool start = overlap && a == A - 1;
        if (start && tt_dist_overlap_begin(p, A > 1 ? add_accum : NULL, &ap) != TT_OK)
            die("%s", tt_last_error());
        tt_backward(loss);
        slots[a].drop = gpt->dropout_rng;
        if (start || A == 1) break;
        size_t off = 0;
        for (int i = 0; i < p->n; i++) {
            tt_tensor *g = p->items[i].tensor->grad;
            if (!g || g->dtype != TT_F32 || !tt_is_contiguous(g))
                die("internal error: --grad-accum needs a contiguous f32 gradient for '%s'",
                    p->items[i].name);
            float *d = tt_data(g);  // (numel)
            size_t n = (size_t)tt_numel(g);
            if (a == 0) {
                memcpy(accum + off, d, n * sizeof *d);
            } else if (a < A - 1) {
                for (size_t j = 0; j < n; j++) accum[off + j] += d[j];
            } else {
                for (size_t j = 0; j < n; j++) d[j] = (accum[off + j] + d[j]) / (float)A;
                tt_bump_version(g, "grad-accum");
            }
            off += n;
        }
        if (a < A - 1) tt_params_zero_grad(p);
    }
    gpt->dropout_rng = slots[0].drop;
    tt_status st = overlap ? tt_dist_overlap_end(p) : tt_dist_allreduce_grads(p);
    free(offset);
    if (st != TT_OK || tt_dist_allreduce_f64(&sum, 1) != TT_OK) die("%s", tt_last_error());
    return sum / (double)M;
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

// Every rank hashes its config, flags, data, parameters (before rank 0's are broadcast) and
// step; each compares the table of all ranks with rank 0's and exits naming the first item
// and rank that differ (every rank reaches the same verdict, so all of them stop).
static void check_ranks_agree(const train_state *s, const tt_gpt *gpt,
                              const tt_text_dataset *ds) {
    int ranks = tt_dist_world_size();
    if (ranks == 1) return;
    uint64_t mine[RANK_NITEMS];
    double cfg[MAX_FIELDS];
    for (int i = 0; i < tt_gpt_nfields; i++) cfg[i] = tt_gpt_field_get(&s->cfg, &tt_gpt_fields[i]);
    mine[RANK_CONFIG] = hash_f64s(cfg, (size_t)tt_gpt_nfields);
    double fl[] = {(double)opt.batch, (double)opt.grad_accum, (double)opt.iters,
                   (double)opt.decay_iters, (double)opt.warmup, (double)opt.eval_every,
                   (double)opt.eval_iters, (double)opt.seed, opt.lr, opt.min_lr,
                   opt.weight_decay, opt.beta2, opt.grad_clip,
                   strcmp(opt.precision, "bf16") == 0 ? 1.0 : 0.0};
    mine[RANK_FLAGS] = hash_f64s(fl, sizeof fl / sizeof fl[0]);
    mine[RANK_DATA] = XXH3_64bits_withSeed(ds->tokens, (size_t)ds->n * sizeof *ds->tokens,
                                           (uint64_t)ds->n_train);
    mine[RANK_PARAMS] = tt_params_fingerprint(&gpt->params);
    mine[RANK_STEP] = (uint64_t)s->st.step;
    uint64_t *all = malloc((size_t)ranks * sizeof mine);
    if (!all) die("out of memory");
    if (tt_dist_allgather(all, mine, sizeof mine) != TT_OK) die("%s", tt_last_error());
    for (int r = 1; r < ranks; r++)
        for (int i = 0; i < RANK_NITEMS; i++)
            if (all[(size_t)r * RANK_NITEMS + i] != all[i]) {
                free(all);
                die_usage("rank %d's %s differs from rank 0's; %s", r, rank_items[i][0],
                          rank_items[i][1]);
            }
    free(all);
}

// Slot streams of this rank into the packed table of all slots (rank 0 keeps it for the
// checkpoint): an all-gather, so every rank calls it at the same steps.
static void gather_slots(train_state *s, const slot_rngs *mine, int64_t accum,
                         unsigned char *all) {
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

static int cmd_train(void) {
    train_state s;
    memset(&s, 0, sizeof s);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_gpt gpt;
    memset(&gpt, 0, sizeof gpt);
    if (opt.resume && !given("--out")) opt.out = opt.resume;  // continue in the resumed file
    if (opt.resume && opt.init_from)
        die_usage("--resume and --init-from exclude each other: --resume continues a run, "
                  "--init-from starts one from given weights");
    if (opt.resume) {
        load_ckpt(&ck, opt.resume, &s);
        tok_check_given(&s.tok, opt.resume);
        resume_flags(&ck, opt.resume, &s);
    } else if (opt.init_from) {
        if (model_flag_given() || opt.preset)
            die_usage("%s: the model comes from --init-from '%s'; leave out the model flags",
                      opt.preset ? "--preset" : model_flag_given(), opt.init_from);
        tt_checkpoint ick;
        load_model("--init-from", opt.init_from, &gpt, &s, &ick);
        tt_ckpt_free(&ick);
        opt.cfg = gpt.cfg;
    } else if (opt.tokenizer && strcmp(opt.tokenizer, "char") != 0) {
        tok_open(&s.tok, opt.tokenizer);
    }
    validate_train_flags();
    set_threads();

    // Data: a char vocab is the file's; on resume it must equal the checkpoint's.
    tt_text_dataset ds;
    if (s.tok.kind == TOK_CHAR) {
        tokenizer fresh = {0};
        load_data(&ds, opt.data, opt.init_from ? &s.tok : &fresh, opt.cfg.block_size,
                  opt.init_from ? "train on a text whose characters the checkpoint knows"
                                : "pass another --data");
        if (opt.resume && (fresh.vocab.size != s.tok.vocab.size ||
                           memcmp(fresh.vocab.chars, s.tok.vocab.chars,
                                  (size_t)s.tok.vocab.size) != 0))
            die_usage("--resume: the vocabulary of '%s' (%d characters) differs from the one "
                      "'%s' was trained on (%d); resume with the same --data", opt.data,
                      fresh.vocab.size, opt.resume, s.tok.vocab.size);
        if (!opt.init_from) s.tok = fresh;
    } else {
        load_data(&ds, opt.data, &s.tok, opt.cfg.block_size, "");
    }
    s.cfg = opt.cfg;
    if (!opt.init_from) s.cfg.vocab_size = s.tok.n_vocab;
    if (tt_gpt_config_validate(&s.cfg) != TT_OK) die_usage("%s", tt_last_error());
    check_memory(&s.cfg, opt.batch, s.cfg.block_size, true);
    if (opt.resume && s.st.step >= opt.iters)
        die_usage("--resume: '%s' is already at step %lld of --iters %lld; pass a larger "
                  "--iters to train further", opt.resume, (long long)s.st.step,
                  (long long)opt.iters);

    // Model and optimizer: fresh from --seed, the checkpoint's state, or --init-from's weights.
    if (opt.resume) {
        model_from_ckpt(&gpt, &ck, opt.resume);
    } else if (!opt.init_from) {
        tt_rng init_rng;
        tt_rng_seed(&init_rng, (uint64_t)opt.seed);
        if (tt_gpt_init(&gpt, &s.cfg, &init_rng) != TT_OK) die_usage("%s", tt_last_error());
    }
    tt_optim_config oc = tt_adamw_config(opt.lr);
    oc.beta1 = 0.9;
    oc.beta2 = opt.beta2;
    tt_optim o;
    tt_optim_init(&o, oc);
    tt_optim_add_decay_groups(&o, &gpt.params, opt.weight_decay);
    s.saved_step = -1;
    if (!opt.resume) {
        s.st.step = 0;
        tt_rng_seed(&s.st.data_rng, (uint64_t)opt.seed ^ 0xDA7A5EEDull);
        s.st.best_val_loss = INFINITY;
        s.st.train_loss = s.st.val_loss = NAN;
    } else if (tt_gpt_ckpt_optim(&o, &ck) != TT_OK) {  // load_ckpt read s.st
        die("--resume: '%s': %s", opt.resume, tt_last_error());
    }

    // The micro-batch slots of this rank: fresh, or the checkpoint's streams.
    int rank = tt_dist_rank(), ranks = tt_dist_world_size();
    bool lead = rank == 0;  // prints, writes --out and --log
    int64_t A = opt.grad_accum, M = A * ranks;
    s.micro_batches = M;
    unsigned char *all_slots = malloc((size_t)M * SLOT_BYTES);
    slot_rngs *slots = malloc((size_t)A * sizeof *slots);
    if (!all_slots || !slots) die("out of memory");
    const unsigned char *saved = NULL;
    size_t saved_n = 0;
    if (opt.resume && M > 1 &&
        (!tt_ckpt_get_bytes(&ck, "train.rng_slots", &saved, &saved_n) ||
         saved_n != (size_t)(M - 1) * SLOT_BYTES))
        die("checkpoint '%s': train.rng_slots is missing or not %lld bytes; the file is not a "
            "valid %s checkpoint", opt.resume, (long long)(M - 1) * SLOT_BYTES, prog->name);
    for (int64_t a = 0; a < A; a++) {
        int64_t g = rank * A + a;
        if (g == 0) {
            slots[a].data = s.st.data_rng;
            slots[a].drop = gpt.dropout_rng;
        } else if (opt.resume) {
            slot_unpack(&slots[a], saved + (g - 1) * SLOT_BYTES);
        } else {
            slot_seed(&slots[a], opt.seed, g);
        }
    }
    tt_ckpt_free(&ck);

    // Several ranks: the same run everywhere, from rank 0's weights.
    check_ranks_agree(&s, &gpt, &ds);
    tt_dist_set_bucket_size((size_t)opt.bucket);
    if (tt_dist_broadcast_params(&gpt.params) != TT_OK) die("%s", tt_last_error());
    if (ranks > 1)
        fprintf(stderr, "%s: rank %d of %d on %s, pid %ld, micro-batches %lld..%lld of %lld\n",
                prog->name, rank, ranks, tt_dist_host(), (long)getpid(), (long long)(rank * A),
                (long long)(rank * A + A - 1), (long long)M);

    // Everything is valid: now touch files.
    if (lead) check_outputs(CMD_TRAIN);
    FILE *log = NULL;
    if (opt.log && lead) {
        struct stat lst;
        bool append = opt.resume && stat(opt.log, &lst) == 0 && lst.st_size > 0;
        log = fopen(opt.log, append ? "a" : "w");
        if (!log) die("cannot open --log '%s': %s; pick a writable path", opt.log,
                      strerror(errno));
        if (!append) fprintf(log, "step,train_loss,val_loss,lr\n");
    }

    int64_t B = opt.batch, T = s.cfg.block_size;
    char par[120] = "";
    if (M > 1)
        snprintf(par, sizeof par, ", %d rank%s x %lld micro-batch%s of %lld", ranks,
                 ranks > 1 ? "s" : "", (long long)A, A > 1 ? "es" : "", (long long)B);
    if (lead)
        fprintf(stderr, "%s: %.2fM parameters, vocab %lld, %lld train / %lld val tokens of "
                "'%s', %d threads%s%s%s\n", prog->name,
                (double)tt_gpt_num_params(&gpt, true) / 1e6, (long long)s.tok.n_vocab,
                (long long)ds.n_train, (long long)(ds.n - ds.n_train), opt.data, nthreads(),
                par, strcmp(opt.precision, "bf16") == 0 ? ", bf16 products" : "",
                opt.resume ? ", resumed" : "");
    if (opt.resume && lead)
        fprintf(stderr, "resumed from %s at step %lld (params fingerprint %016llx)\n",
                opt.resume, (long long)s.st.step,
                (unsigned long long)tt_params_fingerprint(&gpt.params));

    progress pg = {lead && isatty(STDERR_FILENO) != 0, 0, false};
    // --precision bf16: every product of the steps and evals below runs under autocast.
    tt_precision precision = TT_PRECISION_F32;
    tt_precision_parse(opt.precision, &precision);
    float *accum = NULL;  // the running sum of a rank's micro-batch gradients
    if (A > 1 && !(accum = malloc((size_t)tt_params_numel(&gpt.params) * sizeof *accum)))
        die("out of memory for --grad-accum's gradient sum (%lld floats)",
            (long long)tt_params_numel(&gpt.params));
    tt_autocast_begin(precision);
    tt_lr_schedule sched = tt_lr_cosine(opt.lr, opt.warmup, opt.decay_iters, opt.min_lr);
    bool profiling = lead && (opt.profile || opt.trace);  // rank 0 profiles its own steps
    if (lead && opt.trace) tt_profiler_set_trace(true);
    tt_gpt_train(&gpt, true);
    if (lead && opt.profile) {  // the model at the training batch's shape
        tt_scope_begin();
        tt_model_summary(stderr, tt_gpt_module(&gpt), tt_zeros(TT_I32, TT_SHAPE(B, T)));
        tt_scope_end();
    }
    double train_time = 0;
    int64_t steps_run = 0, live_after_first = -1;
    if (ranks == 1) catch_stop_signals();  // several ranks: mpirun's signals end them all
    while (s.st.step < opt.iters) {
        double lr = tt_lr_at(&sched, s.st.step);
        tt_optim_set_lr(&o, lr);
        double t0 = now_s();
        if (profiling) tt_profiler_begin();
        tt_scope_begin();
        double lossv;
        if (M == 1) {
            tt_tensor *x, *y;
            tt_dataset_batch(&ds, TT_SPLIT_TRAIN, B, T, &s.st.data_rng, &x, &y);  // (B, T)
            tt_tensor *loss = tt_gpt_loss(&gpt, x, y);
            lossv = tt_item(loss);
            tt_backward(loss);
        } else {
            lossv = micro_batches(&gpt, &ds, slots, A, M, B, T, accum,
                                  opt.overlap && ranks > 1);
        }
        double norm = opt.grad_clip > 0 ? tt_clip_grad_norm(&gpt.params, opt.grad_clip)
                                        : tt_grad_norm(&gpt.params);
        if (!isfinite(lossv) || !isfinite(norm)) {
            // Before the update: the parameters in memory are still those of the last step.
            progress_clear(&pg);
            char what[100];
            snprintf(what, sizeof what, "the %s is %g", isfinite(lossv) ? "gradient norm" : "loss",
                     isfinite(lossv) ? norm : lossv);
            die_diverged(&s, s.st.step + 1, what);
        }
        tt_optim_step(&o);
        tt_optim_zero_grad(&o);
        tt_scope_end();
        if (profiling) tt_profiler_end();
        double dt = now_s() - t0;
        s.st.step++;
        steps_run++;
        train_time += dt;
        // The steady state holds a fixed number of tensors: a step leaks nothing.
        if (live_after_first < 0) live_after_first = tt_live_tensors();
        else if (tt_live_tensors() != live_after_first)
            die("internal error: %lld live tensors after step %lld, %lld after the first",
                (long long)tt_live_tensors(), (long long)s.st.step, (long long)live_after_first);

        double ms = 1000.0 * train_time / (double)steps_run;
        double tok_s = (double)(B * T * M) * (double)steps_run / train_time;
        bool eval_now = s.st.step % opt.eval_every == 0 || s.st.step == opt.iters ||
                        stop_signal;
        if (log && !eval_now) fprintf(log, "%lld,%.9g,,%.9g\n", (long long)s.st.step, lossv, lr);
        if (lead) progress_step(&pg, s.st.step, opt.iters, lossv, ms, tok_s);
        if (eval_now) {
            s.st.train_loss = estimate_split(&gpt, &ds, TT_SPLIT_TRAIN, B, T, opt.eval_iters,
                                          opt.seed);
            s.st.val_loss = estimate_split(&gpt, &ds, TT_SPLIT_VAL, B, T, opt.eval_iters,
                                        opt.seed);
            progress_clear(&pg);
            check_finite(&s, &gpt);  // the update may have made the weights NaN or Inf
            if (log)
                fprintf(log, "%lld,%.9g,%.9g,%.9g\n", (long long)s.st.step, lossv,
                        s.st.val_loss, lr);
            bool improved = s.st.val_loss < s.st.best_val_loss;
            if (improved) s.st.best_val_loss = s.st.val_loss;
            if (M > 1) gather_slots(&s, slots, A, all_slots);
            if (lead) {
                progress_clear(&pg);
                printf("eval step=%lld train_loss=%.6f val_loss=%.6f\n", (long long)s.st.step,
                       s.st.train_loss, s.st.val_loss);
                check_stdout();
                fprintf(stderr, "step %lld: train loss %.4f, val loss %.4f%s\n",
                        (long long)s.st.step, s.st.train_loss, s.st.val_loss,
                        improved ? " (best so far)" : "");
                save_or_die(&s, &gpt, &o, opt.data, &pg, improved);
            } else {
                s.saved_step = s.st.step;  // rank 0 saved it (or stopped every rank)
            }
        }
        if (log) check_log(log, &s);
        if (stop_signal) exit_on_signal(&s, log);
    }
    tt_autocast_end();
    progress_clear(&pg);
    double ms = steps_run ? 1000.0 * train_time / (double)steps_run : 0;
    double tok_s = train_time > 0 ? (double)(B * T * M) * (double)steps_run / train_time : 0;
    if (lead) {
        printf("done steps=%lld train_loss=%.6f val_loss=%.6f ms_per_step=%.3f "
               "tokens_per_s=%.1f\n", (long long)s.st.step, s.st.train_loss, s.st.val_loss, ms,
               tok_s);
        check_stdout();
    }
    if (lead && opt.profile) tt_profiler_report(stderr);
    if (lead && opt.trace) {
        if (tt_profiler_write_trace(opt.trace) != TT_OK) die("--trace: %s", tt_last_error());
        fprintf(stderr, "%s: wrote %s (%lld events; open it in ui.perfetto.dev)\n", prog->name,
                opt.trace, (long long)tt_profiler_totals().events);
    }
    double ar_s = tt_dist_allreduce_seconds();
    if (ranks > 1 && lead && steps_run > 0)
        fprintf(stderr, "%s: gradient all-reduce %.3f ms per step, the wait for the slowest rank "
                "included (%.1f%% of the step)\n", prog->name, 1000.0 * ar_s / (double)steps_run,
                train_time > 0 ? 100.0 * ar_s / train_time : 0.0);
    free(slots);
    free(all_slots);
    free(accum);
    if (log && fclose(log) != 0) die("cannot write --log '%s': %s", opt.log, strerror(errno));
    tt_optim_free(&o);
    tt_gpt_free(&gpt);
    tt_dataset_free(&ds);
    tok_free(&s.tok);
    return 0;
}

// ---- sample ----

static void print_token(int32_t tok, void *ctx) {
    tok_write(ctx, tok, stdout);
    check_stdout();  // a full disk or a closed stdout stops generation at once
}

// The model path of sample and eval: --ckpt, or (gpt) --init-from; exits when neither or both.
static const char *model_path(const char *cmd) {
    if (opt.ckpt && opt.init_from)
        die_usage("pass --ckpt or --init-from, not both (they name the model to %s)", cmd);
    if (opt.init_from) return opt.init_from;
    if (!opt.ckpt) {
        if (prog->char_only)
            die_usage("%s needs --ckpt FILE (e.g. --ckpt %s)", cmd, prog->default_out);
        die_usage("%s needs --ckpt FILE (e.g. --ckpt %s) or --init-from FILE.safetensors", cmd,
                  prog->default_out);
    }
    return opt.ckpt;
}

// --quantize: "int8" quantizes gpt's Linears and head (a note on stderr with their weight
// bytes before and after), "f32" (the default) leaves it; exits on another value.
static void apply_quantize(tt_gpt *gpt) {
    if (!opt.quantize || strcmp(opt.quantize, "f32") == 0) return;
    if (strcmp(opt.quantize, "int8") != 0)
        die_usage("--quantize must be int8 or f32, got '%s'", opt.quantize);
    int64_t before = tt_gpt_matmul_weight_bytes(gpt);
    tt_gpt_quantize(gpt);
    fprintf(stderr, "quantized to int8: matmul weights %lld -> %lld bytes (%.2fx smaller)\n",
            (long long)before, (long long)tt_gpt_matmul_weight_bytes(gpt),
            (double)before / (double)tt_gpt_matmul_weight_bytes(gpt));
}

static int cmd_sample(void) {
    const char *path = model_path("sample");
    set_threads();

    tt_checkpoint ck;
    train_state s;
    tt_gpt gpt;
    load_model(opt.ckpt ? "--ckpt" : "--init-from", path, &gpt, &s, &ck);
    tt_ckpt_free(&ck);
    if (given("--block") && opt.window > s.cfg.block_size)
        die_usage("--block %lld is above the block size %lld of '%s'; use --block <= %lld",
                  (long long)opt.window, (long long)s.cfg.block_size, path,
                  (long long)s.cfg.block_size);
    check_memory(&s.cfg, 1, s.cfg.block_size, false);
    size_t np = strlen(opt.prompt), n_ids;
    if (np == 0) die_usage("--prompt is empty; give at least one character (default: newline)");
    char of[4200];
    snprintf(of, sizeof of, " of '%s'", path);
    int32_t *prompt = tok_encode(&s.tok, opt.prompt, np, &n_ids, "--prompt", of,
                                 "use only characters of the training text");
    for (size_t i = 0; i < n_ids; i++)
        if (prompt[i] >= s.cfg.vocab_size)
            die_usage("--prompt: its token %lld is outside the vocabulary of %lld of '%s'; "
                      "use a prompt of the model's tokens", (long long)prompt[i],
                      (long long)s.cfg.vocab_size, path);
    // A smaller context window than the model's: generation slides over --block tokens.
    if (given("--block")) gpt.cfg.block_size = opt.window;
    apply_quantize(&gpt);

    tt_sample_opts so = tt_sample_opts_default();
    so.temperature = opt.temperature;
    so.top_k = (int)opt.top_k;
    so.top_p = opt.top_p;
    so.use_cache = !opt.no_cache;
    so.n_vocab = s.tok.n_vocab;  // a padded vocab's extra ids have no text
    tt_rng rng;
    tt_rng_seed(&rng, (uint64_t)opt.seed);
    int32_t *out = malloc(((size_t)opt.tokens + 1) * sizeof *out);
    if (!out) die("out of memory");
    fwrite(opt.prompt, 1, np, stdout);
    double t0 = now_s();
    tt_gpt_generate(&gpt, prompt, (int64_t)n_ids, opt.tokens, &so, &rng, out, print_token,
                    &s.tok);
    double dt = now_s() - t0;
    fputc('\n', stdout);
    check_stdout();
    fprintf(stderr, "sampled %lld tokens in %.3f s (%.1f tokens/s, KV cache %s, %d threads, "
            "%s)\n", (long long)opt.tokens, dt, dt > 0 ? (double)opt.tokens / dt : 0.0,
            so.use_cache ? "on" : "off", nthreads(), tt_gpt_is_quantized(&gpt) ? "int8" : "f32");
    free(out);
    free(prompt);
    tt_gpt_free(&gpt);
    tok_free(&s.tok);
    return 0;
}

// ---- eval ----

static int cmd_eval(void) {
    const char *path = model_path("eval");
    set_threads();
    tt_checkpoint ck;
    train_state s;
    tt_gpt gpt;
    load_model(opt.ckpt ? "--ckpt" : "--init-from", path, &gpt, &s, &ck);
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
                  (long long)s.tok.n_vocab, tok_name(&s.tok));
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
    tok_free(&s.tok);
    return 0;
}

// ---- tokenizer tools (gpt only) ----

// The tokenizer of --ckpt, else of --tokenizer (default char: the vocab of --data).
static void tools_tokenizer(tokenizer *t) {
    memset(t, 0, sizeof *t);
    if (opt.ckpt) {
        if (is_safetensors(opt.ckpt))
            die_usage("--ckpt '%s' is a safetensors file, which holds no tokenizer; pass "
                      "--tokenizer gpt2", opt.ckpt);
        tt_checkpoint ck;
        train_state s;
        load_ckpt(&ck, opt.ckpt, &s);
        tt_ckpt_free(&ck);
        tok_check_given(&s.tok, opt.ckpt);
        *t = s.tok;
    } else if (opt.tokenizer && strcmp(opt.tokenizer, "char") != 0) {
        tok_open(t, opt.tokenizer);
    } else {
        tt_text_dataset ds;
        load_data(&ds, opt.data, t, 0, "");
        tt_dataset_free(&ds);
    }
}

// Reads all of stdin into a new buffer (free it); *n bytes.
static char *read_stdin(size_t *n) {
    size_t cap = 65536, len = 0;
    char *b = malloc(cap + 1);
    if (!b) die("out of memory");
    for (;;) {
        if (len == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) die("out of memory reading stdin (%zu bytes)", len);
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) break;
    }
    if (ferror(stdin)) die("cannot read stdin: %s", strerror(errno));
    b[len] = 0;
    *n = len;
    return b;
}

static int cmd_tokenize(void) {
    tokenizer t;
    tools_tokenizer(&t);
    tt_text_dataset ds;
    load_data(&ds, opt.data, &t, 0, "use a text whose characters the checkpoint knows");
    printf("tokens=%lld train=%lld val=%lld\n", (long long)ds.n, (long long)ds.n_train,
           (long long)(ds.n - ds.n_train));
    check_stdout();
    tt_dataset_free(&ds);
    tok_free(&t);
    return 0;
}

static int cmd_encode(void) {
    tokenizer t;
    tools_tokenizer(&t);
    size_t n, n_ids;
    char *text = read_stdin(&n);
    int32_t *ids = tok_encode(&t, text, n, &n_ids, "stdin", "",
                              "encode text of the tokenizer's characters");
    for (size_t i = 0; i < n_ids; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    fputc('\n', stdout);
    check_stdout();
    free(ids);
    free(text);
    tok_free(&t);
    return 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int cmd_decode(void) {
    tokenizer t;
    tools_tokenizer(&t);
    size_t n;
    char *text = read_stdin(&n);
    // Every id is checked before any byte is written: bad input writes nothing.
    size_t cap = n / 2 + 1, count = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) die("out of memory");
    char what[24] = "";  // the text at the first bad id, at offset i
    size_t i = 0;
    long long v = 0;
    bool bad = false, not_id = false;
    for (;;) {
        while (i < n && is_space(text[i])) i++;
        if (i == n) break;
        char *end = NULL;
        errno = 0;
        v = (text[i] >= '0' && text[i] <= '9') ? strtoll(text + i, &end, 10) : -1;
        not_id = v < 0 || errno == ERANGE || (end < text + n && !is_space(*end));
        if (not_id || v >= t.n_vocab) {
            snprintf(what, sizeof what, "%.20s", text + i);
            bad = true;
            break;
        }
        ids[count++] = (int32_t)v;
        i = (size_t)(end - text);
    }
    free(text);
    if (bad) {  // the ids are freed first: LeakSanitizer checks the exit
        free(ids);
        if (not_id)
            die_usage("decode: stdin holds '%s' at byte %zu, not a token id; pass decimal "
                      "ids separated by spaces", what, i);
        die_usage("decode: id %lld (token %zu of stdin) is outside the %s tokenizer's "
                  "[0, %lld); pass ids of the same tokenizer", v, count + 1, tok_name(&t),
                  (long long)t.n_vocab);
    }
    for (size_t k = 0; k < count; k++) tok_write(&t, ids[k], stdout);
    check_stdout();
    free(ids);
    tok_free(&t);
    return 0;
}

static int cmd_bpe_train(void) {
    if (!given("--merges")) die_usage("bpe-train needs --merges N (e.g. --merges 512)");
    if (!given("--out")) die_usage("bpe-train needs --out VOCAB (e.g. --out out/bpe.vocab)");
    unsigned char *text;
    size_t n;
    tt_status st = tt_read_file(opt.data, &text, &n);
    if (st == TT_OK && n == 0) st = tt_set_error(TT_ERR_ARG, "'%s' is empty", opt.data);
    if (st != TT_OK) data_error(st, opt.data);
    check_outputs(CMD_BPE_TRAIN);
    tt_bpe bpe;
    double t0 = now_s();
    if (tt_bpe_train(&bpe, (const char *)text, n, (int)opt.merges) != TT_OK)
        die_usage("bpe-train: %s", tt_last_error());
    free(text);
    if (tt_bpe_save(&bpe, opt.out) != TT_OK) die("%s", tt_last_error());
    fprintf(stderr, "%s: %d merges of '%s' in %.1f s: vocab of %d ids written to %s\n",
            prog->name, bpe.n_merges, opt.data, now_s() - t0, bpe.n_vocab, opt.out);
    tt_bpe_free(&bpe);
    return 0;
}

static int cmd_export(void) {
    if (!opt.ckpt) die_usage("export needs --ckpt FILE (a checkpoint of %s train)", prog->name);
    if (!given("--out")) die_usage("export needs --out FILE.safetensors");
    tt_st_dtype dt = TT_ST_F32;
    if (opt.dtype && strcmp(opt.dtype, "f16") == 0) dt = TT_ST_F16;
    else if (opt.dtype && strcmp(opt.dtype, "bf16") == 0) dt = TT_ST_BF16;
    else if (opt.dtype && strcmp(opt.dtype, "f32") != 0)
        die_usage("--dtype '%s' is not one of f32, f16, bf16", opt.dtype);
    tt_checkpoint ck;
    train_state s;
    load_ckpt(&ck, opt.ckpt, &s);
    tt_gpt gpt;
    model_from_ckpt(&gpt, &ck, opt.ckpt);
    tt_ckpt_free(&ck);
    check_outputs(CMD_EXPORT);
    tt_status st = tt_gpt_save_hf(&gpt, opt.out, dt);
    if (st == TT_ERR_ARG)
        die_usage("export: '%s': %s; train with --preset gpt2 (other flags may shrink it) to "
                  "export", opt.ckpt, tt_last_error());
    if (st != TT_OK) die("export: %s", tt_last_error());
    fprintf(stderr, "%s: wrote %s (GPT-2 layout; its tokenizer, %s, is not in the file)\n",
            prog->name, opt.out, tok_name(&s.tok));
    tt_gpt_free(&gpt);
    tok_free(&s.tok);
    return 0;
}

// ---- main ----

static const struct {
    const char *name;
    int cmd;
    int (*run)(void);
    bool gpt_only;
} commands[] = {
    {"train", CMD_TRAIN, cmd_train, false},      {"sample", CMD_SAMPLE, cmd_sample, false},
    {"eval", CMD_EVAL, cmd_eval, false},         {"tokenize", CMD_TOKENIZE, cmd_tokenize, true},
    {"encode", CMD_ENCODE, cmd_encode, true},    {"decode", CMD_DECODE, cmd_decode, true},
    {"bpe-train", CMD_BPE_TRAIN, cmd_bpe_train, true},
    {"export", CMD_EXPORT, cmd_export, true},
};

// --preset NAME (train) sets the model flags before any other flag is read, so flags given
// anywhere override it.
static void apply_preset(int argc, char **argv) {
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], "--preset") == 0 &&
            tt_gpt_config_preset(argv[i + 1], &opt.cfg) != TT_OK)
            die_usage("--preset: %s", tt_last_error());
}

int gpt_main(int argc, char **argv, const gpt_program *p) {
    prog = p;
    const char *which = p->char_only ? "train, sample or eval"
                                     : "train, sample, eval, tokenize, encode, decode, "
                                       "bpe-train or export";
    if (argc < 2) die_usage("missing command; run %s %s (--help)", p->name, which);
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    // A file-size limit (ulimit -f) must fail a write with EFBIG, reported like a full disk,
    // not kill the process halfway through a save.
    signal(SIGXFSZ, SIG_IGN);
    tt_set_oom_hook(on_oom, NULL);
    set_defaults();
    opt.out = p->default_out;
    if (tt_gpt_nfields > MAX_FIELDS) die("internal error: raise MAX_FIELDS to %d", tt_gpt_nfields);
    int code = -1;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name) != 0 || (commands[i].gpt_only && p->char_only))
            continue;
        if (commands[i].cmd == CMD_TRAIN && !p->char_only) apply_preset(argc, argv);
        parse_args(argc, argv, commands[i].cmd, cmd);
        // Training runs on every rank of an mpirun job (make MPI=1); other commands alone.
        if (commands[i].cmd == CMD_TRAIN && tt_dist_init(&argc, &argv) != TT_OK)
            die("%s", tt_last_error());
        code = commands[i].run();
        break;
    }
    if (code < 0) {
        if (p->char_only)
            die_usage("unknown command '%s'; use train, sample or eval (--help)", cmd);
        die_usage("unknown command '%s'; use %s (--help)", cmd, which);
    }
    // Everything was freed: a leftover tensor is a bug.
    if (tt_live_tensors() != 0)
        die("internal error: %lld tensors still alive at exit", (long long)tt_live_tensors());
    tt_dist_finalize();
    return code;
}
