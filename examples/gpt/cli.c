// The GPT programs' command line (cli.h): errors (one line, exit 2 for bad input, 1 for a
// failure), the flags of each command and where each value came from, the parse of argv with
// every number checked against its range (flags.c), and the outputs' checks before any work.
#include "cli.h"
#include "flags.h"

#include "dist/dist.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const gpt_program *prog;
options opt;

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
void die_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie(2, fmt, ap);
}

// A failure while running (I/O, a diverging loss): one line, exit 1.
void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie(1, fmt, ap);
}

// A note on stderr: a default was lowered to fit a flag the user gave.
void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: note: ", prog->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

// stdout may be a full disk or a closed pipe too: a silent truncation would look like success.
void check_stdout(void) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    int e = errno;
    die("cannot write to stdout: %s", strerror(e ? e : EIO));
}

// ---- command-line flags ----

// F_STRS: repeatable; F_PATHS: every argument after it up to the next --flag, repeatable
typedef enum flag_kind { F_INT, F_FLOAT, F_STR, F_BOOL, F_STRS, F_PATHS } flag_kind;

typedef struct flag {
    const char *name;
    flag_kind kind;
    void *dst;
    int cmds;
    bool given;
    bool gpt_only;  // not a char_gpt flag
} flag;

static flag flags[] = {
    {"--data", F_STR, &opt.data, CMD_TRAIN | CMD_EVAL | CMD_TOKENS | CMD_BPE_TRAIN, false, 0},
    {"--data", F_PATHS, &opt.inputs, CMD_PREPARE, false, 1},
    {"--out", F_STR, &opt.out, CMD_TRAIN | CMD_BPE_TRAIN | CMD_EXPORT | CMD_PREPARE, false, 0},
    {"--resume", F_STR, &opt.resume, CMD_TRAIN, false, 0},
    {"--log", F_STR, &opt.log, CMD_TRAIN, false, 0},
    // train's model flags are the config table's (tt_gpt_fields); sample's --block is this:
    {"--block", F_INT, &opt.window, CMD_SAMPLE, false, 0},
    {"--batch", F_INT, &opt.batch, CMD_TRAIN | CMD_EVAL | CMD_SAMPLE, false, 0},
    {"--iters", F_INT, &opt.iters, CMD_TRAIN, false, 0},
    {"--decay-iters", F_INT, &opt.decay_iters, CMD_TRAIN, false, 0},
    {"--lr", F_FLOAT, &opt.lr, CMD_TRAIN, false, 0},
    {"--min-lr", F_FLOAT, &opt.min_lr, CMD_TRAIN, false, 0},
    {"--warmup", F_INT, &opt.warmup, CMD_TRAIN, false, 0},
    {"--weight-decay", F_FLOAT, &opt.weight_decay, CMD_TRAIN, false, 0},
    {"--beta2", F_FLOAT, &opt.beta2, CMD_TRAIN, false, 0},
    {"--optim", F_STR, &opt.optim, CMD_TRAIN, false, 0},
    {"--muon-lr", F_FLOAT, &opt.muon_lr, CMD_TRAIN, false, 0},
    {"--muon-weight-decay", F_FLOAT, &opt.muon_weight_decay, CMD_TRAIN, false, 0},
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
    {"--min-p", F_FLOAT, &opt.min_p, CMD_SAMPLE, false, 1},
    {"--repeat-penalty", F_FLOAT, &opt.repeat_penalty, CMD_SAMPLE, false, 1},
    {"--stop", F_STRS, &opt.stops, CMD_SAMPLE, false, 1},
    {"--prompts", F_STR, &opt.prompts, CMD_SAMPLE, false, 1},
    {"--tokenizer", F_STR, &opt.tokenizer,
     CMD_TRAIN | CMD_SAMPLE | CMD_EVAL | CMD_TOKENS | CMD_PREPARE, false, 1},
    {"--shard-tokens", F_INT, &opt.shard_tokens, CMD_PREPARE, false, 1},
    {"--preset", F_STR, &opt.preset, CMD_TRAIN, false, 1},
    {"--init-from", F_STR, &opt.init_from, CMD_TRAIN | CMD_SAMPLE | CMD_EVAL, false, 1},
    {"--merges", F_INT, &opt.merges, CMD_BPE_TRAIN, false, 1},
    {"--dtype", F_STR, &opt.dtype, CMD_EXPORT, false, 1},
    {"--format", F_STR, &opt.format, CMD_EXPORT, false, 1},
    {"--layout", F_STR, &opt.layout, CMD_EXPORT, false, 1},
    {"--precision", F_STR, &opt.precision, CMD_TRAIN, false, 0},
    {"--checkpoint-blocks", F_BOOL, &opt.checkpoint_blocks, CMD_TRAIN, false, 0},
    {"--quantize", F_STR, &opt.quantize, CMD_SAMPLE | CMD_EVAL, false, 0},
    // ---- profiling ----
    {"--profile", F_BOOL, &opt.profile, CMD_TRAIN, false, 0},
    {"--trace", F_STR, &opt.trace, CMD_TRAIN, false, 0},
    {"--grad-accum", F_INT, &opt.grad_accum, CMD_TRAIN, false, 0},
    // ---- the all-reduce overlapped with the backward ----
    {"--overlap", F_BOOL, &opt.overlap, CMD_TRAIN, false, 0},
    {"--bucket", F_INT, &opt.bucket, CMD_TRAIN, false, 0},
    // ---- the lr schedule and its flags (schedule.c) ----
    {"--schedule", F_STR, &opt.schedule, CMD_TRAIN, false, 0},
    {"--warmdown", F_INT, &opt.warmdown, CMD_TRAIN, false, 0},
    {"--final-lr-frac", F_FLOAT, &opt.final_lr_frac, CMD_TRAIN, false, 0},
    {"--pct-start", F_FLOAT, &opt.pct_start, CMD_TRAIN, false, 0},
    {"--anneal", F_STR, &opt.anneal, CMD_TRAIN, false, 0},
    {"--div-factor", F_FLOAT, &opt.div_factor, CMD_TRAIN, false, 0},
    {"--final-div-factor", F_FLOAT, &opt.final_div_factor, CMD_TRAIN, false, 0},
    {"--three-phase", F_BOOL, &opt.three_phase, CMD_TRAIN, false, 0},
    {"--factor", F_FLOAT, &opt.factor, CMD_TRAIN, false, 0},
    {"--patience", F_INT, &opt.patience, CMD_TRAIN, false, 0},
    {"--cooldown", F_INT, &opt.cooldown, CMD_TRAIN, false, 0},
    {"--threshold", F_FLOAT, &opt.threshold, CMD_TRAIN, false, 0},
};
#define NFLAGS ((int)(sizeof flags / sizeof flags[0]))
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
static int find_cfg_flag(const char *name) { return gpt_model_flag_field(name); }

// Whether the user gave a flag (of the running command).
int running_cmd;
bool given(const char *name) {
    int i = running_cmd == CMD_TRAIN ? find_cfg_flag(name) : -1;
    if (i >= 0) return cfg_given[i];
    flag *f = find_flag(name, running_cmd);
    return f && f->given;
}

// The usage text; its model flags come from the config's field table (flags.c).
static void print_usage(FILE *fp) {
    fputs(prog->usage_head, fp);
    gpt_usage_model_flags(fp, prog->usage_indent);
    fputs(prog->usage_synopsis, fp);
    fputs(prog->usage_tail, fp);
    if (prog->usage_more) fputs(prog->usage_more, fp);
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
    opt.optim = "adamw";
    opt.muon_lr = 0.02;
    opt.muon_weight_decay = 0;
    opt.grad_clip = 1.0;
    opt.eval_every = 250;
    opt.eval_iters = 20;
    opt.seed = 1337;
    opt.grad_accum = 1;
    opt.schedule = "cosine";
    opt.pct_start = 0.3;  // OneCycleLR's and ReduceLROnPlateau's defaults
    opt.anneal = "cos";
    opt.div_factor = 25;
    opt.final_div_factor = 1e4;
    opt.factor = 0.1;
    opt.patience = 10;
    opt.threshold = 1e-4;
    opt.bucket = (int64_t)TT_DIST_BUCKET;
    opt.precision = "f32";
    opt.threads = 0;  // the library's default
    opt.prompt = "\n";
    opt.tokens = 500;
    opt.top_k = 200;
    opt.temperature = 0.8;
    opt.top_p = 1.0;
    opt.repeat_penalty = 1.0;
    opt.shard_tokens = 100000000;
}

// ---- the numeric flags' ranges (flags.c; the model flags': the field table's) ----
static const char *ckpt_src;  // the checkpoint the flags marked in flag_ckpt were read from

static gpt_range range_of(const char *name) {
    int ci = running_cmd == CMD_TRAIN ? find_cfg_flag(name) : -1;
    int64_t lo, hi;
    if (ci < 0) return gpt_flag_range(name, MAX_BLOCK);
    if (tt_gpt_fields[ci].type == TT_GPT_FIELD_F64)
        return (gpt_range){name, tt_gpt_fields[ci].lo, tt_gpt_fields[ci].hi, "[)"};
    field_range(&tt_gpt_fields[ci], &lo, &hi);
    return (gpt_range){name, (double)lo, (double)hi, "[]"};
}

const char *origin(const char *name, bool say_given) {
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

void check_flag(const char *name) {
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

void from_ckpt(const char *name, const char *path) {
    flag_ckpt[find_flag(name, running_cmd) - flags] = true;
    ckpt_src = path;
    check_flag(name);
}

// Parses the value v of flag name into dst (an int64_t, a double or a string), within its
// range: an integer beyond int64 or a real beyond a double is out of it, a denormal is a number.
static void parse_value(const char *name, flag_kind kind, void *dst, const char *v) {
    if (kind == F_STR) *(const char **)dst = v;
    if (kind == F_STRS) {
        if (opt.stops.n == GPT_MAX_STOPS || !*v)
            die_usage("%s: give at most %d non-empty values, got '%s'", name, GPT_MAX_STOPS, v);
        opt.stops.v[opt.stops.n++] = v;
    }
    if (kind != F_INT && kind != F_FLOAT) return;
    double x = gpt_parse_number(v, kind == F_INT, dst, dst);
    if (isnan(x))
        die_usage("%s expects %s, got '%s'; e.g. %s %s", name,
                  kind == F_INT ? "an integer" : "a number", v, name, kind == F_INT ? "4" : "0.5");
    check_range(name, x, v, kind == F_INT);
}

// A flag given twice takes its last value.
static void parse_args(int argc, char **argv, int cmd, const char *cmd_name) {
    char msg[512];
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
            } else if (!gpt_parse_enum(&opt.cfg, ci, argv[++i], msg, sizeof msg)) {
                die_usage("%s", msg);
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
        if (f->kind == F_PATHS) {
            if (!opt.inputs.v && !(opt.inputs.v = calloc((size_t)argc, sizeof(char *))))
                die("out of memory");
            f->given = true;
            opt.inputs.v[opt.inputs.n++] = argv[++i];
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                opt.inputs.v[opt.inputs.n++] = argv[++i];
            continue;
        }
        parse_value(f->name, f->kind, f->dst, argv[++i]);
    }
}

// Whether name is an optimizer the train command builds: adamw, or muon (with AdamW beside it).
bool optim_known(const char *name) {
    tt_optim_kind k;
    return tt_optim_kind_parse(name, &k) && (k == TT_OPTIM_ADAMW || k == TT_OPTIM_MUON);
}

// --threads (given: checked when parsed; else 0, the library's default), --precision and
// --optim.
void set_threads(void) {
    tt_precision prec;
    if (!tt_precision_parse(opt.precision, &prec))
        die_usage("--precision '%s' is not f32 nor bf16", opt.precision);
    if (!optim_known(opt.optim)) die_usage("--optim '%s' is not adamw nor muon", opt.optim);
    if (opt.threads > 0) tt_set_num_threads((int)opt.threads);
}

int nthreads(void) {
    return tt_get_num_threads();
}

// ---- small helpers ----

double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void make_dirs(const char *dir, const char *flagname) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        die_usage("%s path is too long (%zu bytes)", flagname, strlen(dir));
    for (char *p = buf + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            die("cannot create directory '%s' for %s: %s; pick another %s", buf, flagname,
                strerror(errno), flagname);
        if (!(*p = c)) return;
    }
}

// mkdir -p of the directory part of path.
static void make_parent_dirs(const char *path) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        die_usage("--out path is too long (%zu bytes)", strlen(path));
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return;
    *slash = 0;
    make_dirs(buf, "--out");
}

void check_outputs(int cmd) {
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

// --out with .best before its extension (out/char_gpt.ckpt -> out/char_gpt.best.ckpt), or
// with .best appended when its name has no extension: the best state so far.
const char *best_path(void) {
    static char buf[4200];
    tt_trainer_best_path(buf, sizeof buf, opt.out);
    return buf;
}

const char *model_flag_given(void) {
    for (int i = 0; i < tt_gpt_nfields; i++)
        if (cfg_given[i]) return gpt_model_flag(i);
    return NULL;
}

// This program's caps on a config (a GPT on a CPU), beyond the field table's ranges; they also
// bound what a checkpoint may ask us to allocate: the causal mask alone is block^2 ints per
// layer. char_gpt's vocab is at most 256.
static const struct { const char *name; int64_t lo, hi;
} caps[] = {
    {"vocab_size", 1, MAX_VOCAB},     {"block_size", 1, MAX_BLOCK}, {"n_layer", 1, MAX_LAYERS},
    {"n_head", 1, MAX_HEADS},         {"n_kv_head", 1, MAX_HEADS},  {"n_embd", 1, MAX_EMBD},
    {"mlp_hidden", 0, 16 * MAX_EMBD},
};

void field_range(const tt_gpt_field *f, int64_t *lo, int64_t *hi) {
    *lo = (int64_t)f->lo;
    *hi = (int64_t)f->hi;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        if (strcmp(caps[i].name, f->name) == 0) {
            if (caps[i].lo > *lo) *lo = caps[i].lo;
            if (caps[i].hi < *hi) *hi = caps[i].hi;
        }
    if (prog->char_only && strcmp(f->name, "vocab_size") == 0 && *hi > 256) *hi = 256;
}

// The allocator's hook: a failed allocation is one line and exit 1, not an abort.
static void on_oom(const char *message, void *ctx) {
    (void)ctx;
    die("%s; use a smaller --batch, --block or model", message);
}

// ---- main ----

static const struct {
    const char *name;
    int cmd;
    bool gpt_only;
} commands[] = {
    {"train", CMD_TRAIN, false},       {"sample", CMD_SAMPLE, false},
    {"eval", CMD_EVAL, false},         {"tokenize", CMD_TOKENIZE, true},
    {"encode", CMD_ENCODE, true},      {"decode", CMD_DECODE, true},
    {"bpe-train", CMD_BPE_TRAIN, true}, {"export", CMD_EXPORT, true},
    {"prepare", CMD_PREPARE, true},
};

// --preset NAME (train) sets the model flags before any other flag is read, so flags given
// anywhere override it.
static void apply_preset(int argc, char **argv) {
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], "--preset") == 0 &&
            tt_gpt_config_preset(argv[i + 1], &opt.cfg) != TT_OK)
            die_usage("--preset: %s", tt_last_error());
}

int gpt_cli_begin(int argc, char **argv, const gpt_program *p) {
    prog = p;
    const char *which = p->char_only ? "train, sample or eval"
                                     : "train, sample, eval, tokenize, encode, decode, "
                                       "bpe-train, export or prepare";
    if (argc < 2) die_usage("missing command; run %s %s (--help)", p->name, which);
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        exit(0);
    }
    // A file-size limit (ulimit -f) must fail a write with EFBIG, reported like a full disk,
    // not kill the process halfway through a save.
    signal(SIGXFSZ, SIG_IGN);
    tt_set_oom_hook(on_oom, NULL);
    set_defaults();
    opt.out = p->default_out;
    if (tt_gpt_nfields > MAX_FIELDS) die("internal error: raise MAX_FIELDS to %d", tt_gpt_nfields);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name) != 0 || (commands[i].gpt_only && p->char_only))
            continue;
        if (commands[i].cmd == CMD_TRAIN && !p->char_only) apply_preset(argc, argv);
        parse_args(argc, argv, commands[i].cmd, cmd);
        // Training runs on every rank of an mpirun job (make MPI=1); other commands alone.
        if (commands[i].cmd == CMD_TRAIN && tt_dist_init(&argc, &argv) != TT_OK)
            die("%s", tt_last_error());
        return commands[i].cmd;
    }
    if (p->char_only) die_usage("unknown command '%s'; use train, sample or eval (--help)", cmd);
    die_usage("unknown command '%s'; use %s (--help)", cmd, which);
}

int gpt_cli_end(int code) {
    // Everything was freed: a leftover tensor is a bug.
    if (tt_live_tensors() != 0)
        die("internal error: %lld tensors still alive at exit", (long long)tt_live_tensors());
    tt_dist_finalize();
    return code;
}
