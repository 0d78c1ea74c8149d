// The GPT programs' checkpoints, models and data (cli.h): a checkpoint read and validated
// against these programs' caps, the model of a checkpoint or of GPT-2's safetensors, the
// tokenizer of a flag or a checkpoint, the text dataset and the loss estimates of an eval.
#include "cli.h"

#include "dist/dist.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void tok_from_ckpt(tt_tokenizer *t, const tt_checkpoint *ck, const char *path);

// ---- checkpoint entries ----

// Reads an i64 entry within [lo, hi] or exits naming the key.
int64_t ck_i64(const tt_checkpoint *ck, const char *path, const char *key, int64_t lo,
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

double ck_f64(const tt_checkpoint *ck, const char *path, const char *key) {
    double v;
    if (!tt_ckpt_get_f64(ck, key, &v))
        die("checkpoint '%s' has no number '%s'; it was not written by %s train", path,
            key, prog->name);
    return v;
}

// Loads a checkpoint and reads its config, tokenizer and training state, validating them;
// exits on any error.
void load_ckpt(tt_checkpoint *ck, const char *path, train_state *s) {
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
    if (s->tok.kind != TT_TOKENIZER_CHAR && prog->char_only)
        die("checkpoint '%s' was trained on %s tokens, not characters; use gpt, not %s", path,
            tt_tokenizer_name(&s->tok), prog->name);
    if (s->tok.n_vocab > c->vocab_size)  // a larger cfg.vocab_size is a padded vocab
        die("checkpoint '%s': its %s tokenizer has %lld ids but cfg.vocab_size is %lld", path,
            tt_tokenizer_name(&s->tok), (long long)s->tok.n_vocab, (long long)c->vocab_size);
    if (tt_gpt_ckpt_state(ck, &s->st) != TT_OK)
        die("checkpoint '%s': %s; it was not written by %s train", path, tt_last_error(),
            prog->name);
}

// Builds the model of the checkpoint's config with its parameters and dropout stream.
void model_from_ckpt(tt_gpt *gpt, const tt_checkpoint *ck, const char *path) {
    if (tt_gpt_ckpt_model(gpt, ck) != TT_OK)
        die("checkpoint '%s': %s", path, tt_last_error());
}

// Without --data: the data file of the run that wrote the checkpoint, when it recorded one.
void data_from_ckpt(const tt_checkpoint *ck) {
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

// ---- tokenizers ----

// The tokenizer a checkpoint was trained with; exits on a missing or invalid one (2 when GPT-2's
// files cannot be read: `make data` fetches them).
static void tok_from_ckpt(tt_tokenizer *t, const tt_checkpoint *ck, const char *path) {
    const unsigned char *b;
    size_t n;
    bool gpt2 = tt_ckpt_get_bytes(ck, "tokenizer", &b, &n) && n == 4 && memcmp(b, "gpt2", 4) == 0;
    if (tt_tokenizer_from_checkpoint(t, ck, path) == TT_OK) return;
    if (gpt2) die_usage("%s", tt_last_error());
    die("%s", tt_last_error());
}

void tok_open(tt_tokenizer *t, const char *name) {
    tt_status st = tt_tokenizer_open(t, name);
    if (st == TT_OK) return;
    if (strcmp(name, "gpt2") == 0) die_usage("--tokenizer gpt2: %s", tt_last_error());
    if (st == TT_ERR_ARG)  // no such name nor file
        die_usage("--tokenizer %s; pass one of them, e.g. a vocab written by gpt bpe-train",
                  tt_last_error());
    die_usage("--tokenizer: %s; pass char, gpt2 or a vocab written by gpt bpe-train",
              tt_last_error());
}

int32_t *tok_encode(tt_tokenizer *t, const char *text, size_t n, size_t *n_out,
                    const char *what, const char *of, const char *fix) {
    int32_t *ids;
    if (tt_tokenizer_encode(t, text, n, &ids, n_out) != TT_OK)
        die_usage("%s: %s%s; %s", what, tt_last_error(), of, fix);
    return ids;
}

// Whether path names a safetensors file (by its extension): --init-from reads it as GPT-2's.
bool is_safetensors(const char *path) {
    size_t n = strlen(path);
    return n >= 12 && strcmp(path + n - 12, ".safetensors") == 0;
}

// A --tokenizer given with a model file must be the one it was trained with, which comes from
// the file (from: "the checkpoint", "its metadata").
static void check_given(const tt_tokenizer *t, const char *path, const char *from) {
    if (!opt.tokenizer) return;
    bool same;
    if (strcmp(opt.tokenizer, "char") == 0 || strcmp(opt.tokenizer, "gpt2") == 0) {
        same = strcmp(opt.tokenizer, tt_tokenizer_name(t)) == 0;
    } else {
        unsigned char *b;
        size_t n;
        same = t->kind == TT_TOKENIZER_FILE && tt_read_file(opt.tokenizer, &b, &n) == TT_OK &&
               n == t->file_len && memcmp(b, t->file, n) == 0;
        if (t->kind == TT_TOKENIZER_FILE && same) free(b);
    }
    if (!same)
        die_usage("--tokenizer %s is not the tokenizer '%s' was trained with (%s); leave "
                  "--tokenizer out, it comes from %s", opt.tokenizer, path,
                  tt_tokenizer_name(t), from);
}

void tok_check_given(const tt_tokenizer *t, const char *path) {
    check_given(t, path, "the checkpoint");
}

// ---- models ----

// Exits (1) with the estimate and the machine's memory when a run of c on (B, T) batches
// cannot fit, before it allocates.
void check_memory(const tt_gpt_config *c, int64_t B, int64_t T, bool training) {
    if (tt_gpt_check_memory(c, B, T, training, training ? "training" : "this model") != TT_OK)
        die("%s; use a smaller --batch, --block or model", tt_last_error());
}

// After a model file's tokenizer was looked for (found: the file had one, in t): a --tokenizer
// given must be that one; without one, --tokenizer (default gpt2), never char.
static void tok_given_or_default(tt_tokenizer *t, bool found, const char *flagname,
                                 const char *path) {
    if (found) {
        check_given(t, path, "its metadata");
        return;
    }
    if (opt.tokenizer && strcmp(opt.tokenizer, "char") == 0)
        die_usage("%s '%s' has no tokenizer metadata, so no char vocab (gpt export writes "
                  "them); use --tokenizer gpt2 or a vocab file", flagname, path);
    tok_open(t, opt.tokenizer ? opt.tokenizer : "gpt2");
}

// The config and a fresh state of a model read from a GPT-2 file (safetensors or GGUF), after
// checking its vocabulary holds the tokenizer's ids.
static void loaded_model(const char *flagname, const char *path, const tt_gpt *gpt,
                         train_state *s) {
    s->cfg = gpt->cfg;
    // Larger is a padded vocab (nanoGPT's 50304); smaller cannot score the tokenizer's ids
    // (sample needs only the prompt's within it: checked there).
    if (s->tok.n_vocab > s->cfg.vocab_size && running_cmd != CMD_SAMPLE)
        die_usage("%s '%s' has a vocabulary of %lld, fewer than the %lld ids of the %s "
                  "tokenizer; pass the tokenizer it was trained with", flagname, path,
                  (long long)s->cfg.vocab_size, (long long)s->tok.n_vocab,
                  tt_tokenizer_name(&s->tok));
    s->st.best_val_loss = INFINITY;
    s->st.train_loss = s->st.val_loss = NAN;
}

// The tokenizer of an open safetensors file: its metadata's (gpt export writes it), which a
// --tokenizer given must match; without one, --tokenizer (default gpt2), as for Hugging Face's
// GPT-2 files.
static void tok_from_safetensors(tt_tokenizer *t, const tt_safetensors *f,
                                 const char *flagname) {
    bool found;
    if (tt_tokenizer_from_metadata(t, f, &found) != TT_OK)
        die_usage("%s: %s", flagname, tt_last_error());
    tok_given_or_default(t, found, flagname, f->path);
}

// The model and tokenizer of a .safetensors file (load_model's): Llama's layout when it has
// model.embed_tokens.weight (tt_gpt_is_llama), else GPT-2's.
static void load_safetensors(const char *flagname, const char *path, tt_gpt *gpt,
                             train_state *s) {
    tt_safetensors f;
    if (tt_safetensors_open(&f, path) != TT_OK ||
        (tt_gpt_is_llama(&f) ? tt_gpt_load_llama_file(gpt, &f) : tt_gpt_load_hf_file(gpt, &f, 0)) !=
            TT_OK)
        die_usage("%s: %s; pass a GPT-2 or Llama model.safetensors or a checkpoint of %s train",
                  flagname, tt_last_error(), prog->name);
    tok_from_safetensors(&s->tok, &f, flagname);
    tt_safetensors_close(&f);
    loaded_model(flagname, path, gpt, s);
}

// Whether path names a GGUF file (by its extension): --init-from reads it as gpt2's.
bool is_gguf(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".gguf") == 0;
}

// The model and tokenizer of a GGUF gpt2 file (load_model's): the tokenizer of its metadata,
// else --tokenizer (default gpt2).
static void load_gguf(const char *flagname, const char *path, tt_gpt *gpt, train_state *s) {
    tt_gguf f;
    if (tt_gguf_open(&f, path) != TT_OK || tt_gpt_load_gguf_file(gpt, &f) != TT_OK)
        die_usage("%s: %s; pass a gpt2 GGUF, a GPT-2 model.safetensors or a checkpoint of %s "
                  "train", flagname, tt_last_error(), prog->name);
    bool found;
    if (tt_tokenizer_from_gguf(&s->tok, &f, &found) != TT_OK)
        die_usage("%s: %s", flagname, tt_last_error());
    tok_given_or_default(&s->tok, found, flagname, path);
    tt_gguf_close(&f);
    loaded_model(flagname, path, gpt, s);
}

// The model (and tokenizer) of --init-from / --ckpt path: a checkpoint of train, with its
// tokenizer, or a GPT-2 .safetensors, with the tokenizer of its metadata or --tokenizer
// (default gpt2). ck receives the checkpoint when path is one (left empty otherwise); s its
// config, tokenizer and state.
void load_model(const char *flagname, const char *path, tt_gpt *gpt, train_state *s,
                tt_checkpoint *ck) {
    memset(s, 0, sizeof *s);
    tt_ckpt_init(ck);
    if (is_safetensors(path)) {
        load_safetensors(flagname, path, gpt, s);
        return;
    }
    if (is_gguf(path)) {
        load_gguf(flagname, path, gpt, s);
        return;
    }
    load_ckpt(ck, path, s);
    tok_check_given(&s->tok, path);
    model_from_ckpt(gpt, ck, path);
}

// The model path of sample and eval: --ckpt, or (gpt) --init-from; exits when neither or both.
static const char *model_path(const char *cmd) {
    if (opt.ckpt && opt.init_from)
        die_usage("pass --ckpt or --init-from, not both (they name the model to %s)", cmd);
    if (opt.init_from) return opt.init_from;
    if (!opt.ckpt) {
        if (prog->char_only)
            die_usage("%s needs --ckpt FILE (e.g. --ckpt %s)", cmd, prog->default_out);
        die_usage("%s needs --ckpt FILE (e.g. --ckpt %s) or --init-from FILE.safetensors|.gguf",
                  cmd,
                  prog->default_out);
    }
    return opt.ckpt;
}

const char *open_model(const char *cmd, tt_gpt *gpt, train_state *s, tt_checkpoint *ck) {
    const char *path = model_path(cmd);
    set_threads();
    load_model(opt.ckpt ? "--ckpt" : "--init-from", path, gpt, s, ck);
    return path;
}

// --quantize FORMAT (tt_quant_parse's names) runs gpt's Linears and head in that format (a
// note on stderr with their weight bytes before and after); "f32", the default, leaves it;
// exits on another value.
void apply_quantize(tt_gpt *gpt) {
    tt_quant q = TT_QUANT_NONE;
    if (opt.quantize && tt_quant_parse(opt.quantize, &q) != TT_OK)
        die_usage("--quantize: %s", tt_last_error());
    if (q == TT_QUANT_NONE) return;
    int64_t before = tt_gpt_matmul_weight_bytes(gpt);
    tt_gpt_quantize_as(gpt, q);
    fprintf(stderr, "quantized to %s: matmul weights %lld -> %lld bytes (%.2fx smaller)\n",
            tt_quant_name(q), (long long)before, (long long)tt_gpt_matmul_weight_bytes(gpt),
            (double)before / (double)tt_gpt_matmul_weight_bytes(gpt));
}

// ---- data and loss estimates ----

// The eval batches of a split come from their own stream seeded by --seed, so evals never
// disturb the training batches (resume stays exact) and every eval sees the same batches.
static void eval_rng(tt_rng *r, int64_t seed, tt_data_split split) {
    tt_rng_seed(r, (uint64_t)seed * 0x9E3779B97F4A7C15ull + 0x5EED0000ull + (uint64_t)split);
}

double estimate_split(tt_gpt *gpt, const tt_text_dataset *ds, tt_data_split split,
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

// The file to read for --data path: path, but the default corpus (DEFAULT_DATA, or a
// checkpoint's record of it) missing from the working directory is looked up as
// tinyshakespeare.txt by tt_data_path ($TINYTORCH_DATA, the install location, the source tree).
const char *data_file(const char *path) {
    static char found[4096];
    struct stat sb;
    if (strcmp(path, DEFAULT_DATA) != 0 || stat(path, &sb) == 0) return path;
    return tt_data_path(DEFAULT_DATA_NAME, found, sizeof found) == TT_OK ? found : path;
}

// Exits with the message of a --data file that cannot be read.
void data_error(tt_status s, const char *path) {
    const char *e = tt_last_error();
    char found[4096];
    if (strcmp(path, DEFAULT_DATA) == 0 && s == TT_ERR_IO &&
        tt_data_path(DEFAULT_DATA_NAME, found, sizeof found) != TT_OK)
        die_usage("--data: %s is not in the working directory, and %s; or pass --data FILE",
                  DEFAULT_DATA, tt_last_error());
    if (strcmp(path, DEFAULT_DATA) == 0 && s == TT_ERR_IO)
        die_usage("--data: %s; run `make data` to fetch it, or pass --data FILE", e);
    if (strchr(e, ';')) die_usage("--data: %s", e);
    die_usage("--data: %s; pass a readable text file", e);
}

// ---- token shards ----

bool is_shard_data(const char *path) {
    struct stat sb;
    size_t n = strlen(path);
    return strpbrk(path, "*?[") || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) ||
           (n >= 4 && strcmp(path + n - 4, ".bin") == 0);
}

void shards_tokenizer_path(const char *spec, char *buf, size_t cap) {
    struct stat sb;
    const char *slash = strrchr(spec, '/');
    if (stat(spec, &sb) == 0 && S_ISDIR(sb.st_mode))
        snprintf(buf, cap, "%s/%s", spec, SHARDS_TOKENIZER);
    else if (slash)
        snprintf(buf, cap, "%.*s/%s", (int)(slash - spec), spec, SHARDS_TOKENIZER);
    else
        snprintf(buf, cap, "%s", SHARDS_TOKENIZER);
}

// The tokenizer of shards spec into t: the file beside them when t has no vocab yet, which a
// --tokenizer char given must be; else t, which that file (when present) must equal.
static void shards_tokenizer(const char *spec, tt_tokenizer *t) {
    char path[4200];
    shards_tokenizer_path(spec, path, sizeof path);
    struct stat sb;
    bool has = stat(path, &sb) == 0, known = t->n_vocab > 0;
    tt_tokenizer side = {0};
    if (has && tt_tokenizer_load(&side, path) != TT_OK)
        die_usage("--data '%s': %s; write the shards again with %s prepare", spec, tt_last_error(),
                  prog->name);
    if (!has && !known)
        die_usage(
            "--data '%s': no %s beside the shards says their tokenizer (gpt prepare "
            "writes it); %s",
            spec, path,
            prog->char_only ? "prepare them with gpt prepare --tokenizer char"
                            : "pass --tokenizer gpt2 or VOCAB, the one they were made with");
    bool char_given = opt.tokenizer && strcmp(opt.tokenizer, "char") == 0;
    if (has &&
        (known ? !tt_tokenizer_equal(t, &side) : char_given && side.kind != TT_TOKENIZER_CHAR))
        die_usage(
            "--data '%s': the shards were made with the %s tokenizer of %s, not the %s "
            "one this run uses; train with their tokenizer or prepare them again",
            spec, tt_tokenizer_name(&side), path, known ? tt_tokenizer_name(t) : "char");
    if (known)
        tt_tokenizer_free(&side);
    else
        *t = side;
}

// The shards of spec, mapped (checked first), in t's ids (shards_tokenizer).
static void load_shards(tt_text_dataset *ds, const char *spec, tt_tokenizer *t, int64_t block) {
    if (tt_dataset_open_shards(ds, spec, 0) != TT_OK) die_usage("--data: %s", tt_last_error());
    shards_tokenizer(spec, t);
    if (tt_shards_check_ids(ds->shards, t->n_vocab) != TT_OK)
        die_usage("--data: %s", tt_last_error());
    if (block > 0 && tt_dataset_check(ds, block) != TT_OK)
        die_usage("'%s': %s", spec, tt_last_error());
}

void load_data(tt_text_dataset *ds, const char *path, tt_tokenizer *t, int64_t block,
               const char *fix) {
    if (is_shard_data(path)) {
        load_shards(ds, path, t, block);
        return;
    }
    tt_status s = tt_tokenizer_load_text(t, ds, data_file(path), TRAIN_FRAC);
    if (s == TT_ERR_MISMATCH) die_usage("%s; %s", tt_last_error(), fix);
    if (s == TT_ERR_IO || s == TT_ERR_ARG) data_error(s, path);
    if (s != TT_OK) die("--data '%s': %s", path, tt_last_error());
    if (block > 0 && tt_dataset_check(ds, block) != TT_OK)
        die_usage("'%s': %s", path, tt_last_error());
}
