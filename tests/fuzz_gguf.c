// libFuzzer target over the GGUF reader (io/gguf.c) and the gpt2 mapping (models/gpt/gpt_gguf.c):
// each input is opened from memory and from a file, with the same status and message; a
// failure must leave the struct empty with a one-line message; a file that opens has every
// tensor readable by name, every array element readable, loads as a GPT (or is refused with a
// status, never an abort), gives its tokenizer (or a refusal; GPT-2's own vocab is not loaded
// here), and is written again by the writer (its scalar, string and flat array metadata and
// its tensors) to a file that reopens with the same keys, names, types and shapes, and the same
// F32 / F16 / BF16 values bit for bit. Any abort, leak or sanitizer report is a crash. Not a
// Check suite: `make fuzz` builds it with clang.
//
//     build-fuzz/fuzz_gguf crash-<sha1>       # replay one input
//
// Compiled with -DTT_FUZZ_REPLAY (any C compiler, no libFuzzer) it has its own main instead:
// `fuzz_gguf_replay FILE...` runs each file through the same checks (make test replays
// tests/fuzz_corpus_gguf/ this way) and `--write-seeds DIR` writes that seed corpus.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinytorch.h"
#include "fuzz_util.h"
#include "models/gpt/gpt.h"
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int64_t base_tensors;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const files[] = {"rt.gguf", "in.gguf", NULL};
    fuzz_setup("gguf", files);
    base_tensors = tt_live_tensors();
    return 0;
}

// ---- invariants ----

static void check_failed(const tt_gguf *f, tt_status s) {
    const char *m = tt_last_error();
    if (s != TT_ERR_FORMAT || f->n_kv || f->kv || f->n_tensors || f->tensors || f->bytes ||
        f->by_name || strncmp(m, "gguf 'fuzz': ", 13) != 0 || strchr(m, '\n'))
        fuzz_crash("a failed open: status %s, message '%s'", tt_status_str(s), m);
}

// Every element of every array (nested ones too) reads.
static void walk(const tt_gguf_value *v) {
    if (v->type != TT_GGUF_ARRAY) return;
    for (uint64_t i = 0; i < v->n; i++) {
        tt_gguf_value e = tt_gguf_array_get(v, i);
        if (e.type != v->elem)
            fuzz_crash("array element %llu has another type", (unsigned long long)i);
        walk(&e);
    }
}

// Scalars, strings and flat arrays of f's pairs into w (nested arrays are left out).
static void copy_kvs(const tt_gguf *f, tt_gguf_writer *w, int64_t *n) {
    *n = 0;
    for (int64_t i = 0; i < f->n_kv; i++) {
        const char *k = f->kv[i].key;
        const tt_gguf_value *v = &f->kv[i].value;
        if (v->type == TT_GGUF_STRING) {
            if (strlen(v->str) != v->n) continue;  // a NUL inside: the writer takes C strings
            tt_gguf_writer_set_str(w, k, v->str);
        } else if (v->type == TT_GGUF_ARRAY) {
            if (v->elem == TT_GGUF_ARRAY) continue;
            if (v->elem == TT_GGUF_STRING) {
                const char **s = malloc((v->n + 1) * sizeof *s);
                bool ok = true;
                for (uint64_t j = 0; j < v->n; j++) {
                    s[j] = v->items[j].str;
                    ok &= strlen(s[j]) == v->items[j].n;
                }
                if (ok) tt_gguf_writer_set_array(w, k, TT_GGUF_STRING, s, v->n);
                free(s);
                if (!ok) continue;
            } else {
                // The raw bytes are the machine's little-endian values (x86, aarch64).
                tt_gguf_writer_set_array(w, k, v->elem, v->raw, v->n);
            }
        } else {
            tt_gguf_writer_set_num(w, k, v->type, v->num.i, v->num.f);
        }
        (*n)++;
    }
}

// A 16-bit tensor's values equal in both files (NaN matches NaN: its payload may change).
static void same_16(const tt_gguf *f, const tt_gguf_tensor *a, const tt_gguf *g,
                    const tt_gguf_tensor *b) {
    int64_t n = (int64_t)(a->nbytes / 2);
    float *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
    tt_gguf_dequantize(x, tt_gguf_data(f, a), a->type, n);
    tt_gguf_dequantize(y, tt_gguf_data(g, b), b->type, n);
    for (int64_t i = 0; i < n; i++)
        if (x[i] != y[i] && !(x[i] != x[i] && y[i] != y[i]))
            fuzz_crash("tensor '%s'[%lld] changed through a save", a->name, (long long)i);
    free(x);
    free(y);
}

// f written again and reopened: the same keys, tensor names, types, shapes; F32/F16/BF16
// values bit for bit.
static void round_trip(const tt_gguf *f) {
    char path[96];
    fuzz_path(path, sizeof path, "rt.gguf");
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    int64_t n_kv;
    copy_kvs(f, &w, &n_kv);
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const tt_gguf_tensor *t = &f->tensors[i];
        tt_tensor *x;
        if (tt_gguf_get(f, t->name, &x) != TT_OK) fuzz_crash("tensor '%s' does not read", t->name);
        tt_gguf_writer_add(&w, t->name, x, t->type);
        tt_release(x);
    }
    if (tt_gguf_writer_save(&w, path) != TT_OK) fuzz_crash("saving failed: %s", tt_last_error());
    tt_gguf_writer_free(&w);
    tt_gguf g;
    if (tt_gguf_open(&g, path) != TT_OK) fuzz_crash("reopening failed: %s", tt_last_error());
    if (g.n_tensors != f->n_tensors || g.n_kv != n_kv)
        fuzz_crash("the saved file has other counts");
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const tt_gguf_tensor *a = &f->tensors[i], *b = tt_gguf_find(&g, a->name);
        if (!b || b->type != a->type || b->ndim != a->ndim ||
            memcmp(a->ne, b->ne, sizeof a->ne) != 0)
            fuzz_crash("tensor '%s' changed through a save", a->name);
        if (a->type == TT_GGML_F32 &&
            memcmp(tt_gguf_data(f, a), tt_gguf_data(&g, b), a->nbytes) != 0)
            fuzz_crash("tensor '%s': its F32 bytes changed through a save", a->name);
        if (a->type == TT_GGML_F16 || a->type == TT_GGML_BF16)
            same_16(f, a, &g, b);
    }
    tt_gguf_close(&g);
}

static void check_file_open(const uint8_t *data, size_t size, tt_status s_mem) {
    char msg[1024], path[96];
    snprintf(msg, sizeof msg, "%s", tt_last_error());
    fuzz_path(path, sizeof path, "in.gguf");
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0)
        fuzz_crash("cannot write %s", path);
    tt_gguf g;
    tt_status s = tt_gguf_open(&g, path);
    const char *m = tt_last_error(), *tail = strstr(m, "': ");
    if (s != s_mem || (s != TT_OK && (!tail || !strstr(msg, tail))))
        fuzz_crash("opening the file gave %s '%s', from memory %s '%s'", tt_status_str(s), m,
                   tt_status_str(s_mem), msg);
    tt_gguf_close(&g);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tt_gguf f;
    tt_status s = tt_gguf_open_mem(&f, data, size, "fuzz");
    if (s != TT_OK) check_failed(&f, s);
    check_file_open(data, size, s);
    if (s == TT_OK) {
        for (int64_t i = 0; i < f.n_kv; i++) walk(&f.kv[i].value);
        tt_gpt m;
        if (tt_gpt_load_gguf_file(&m, &f) == TT_OK) tt_gpt_free(&m);
        const char *model = tt_gguf_get_str(&f, "tokenizer.ggml.model");
        if (!model || strcmp(model, "gpt2") != 0) {
            tt_tokenizer t;
            bool found;
            if (tt_tokenizer_from_gguf(&t, &f, &found) == TT_OK) tt_tokenizer_free(&t);
        }
        round_trip(&f);
    }
    tt_gguf_close(&f);
    if (tt_live_tensors() != base_tensors)
        fuzz_crash("%lld live tensors after an input, %lld before", (long long)tt_live_tensors(),
                   (long long)base_tensors);
    return 0;
}

#ifdef TT_FUZZ_REPLAY
// ---- replay and seed corpus (no libFuzzer) ----

// Small valid files: a GPT-2 of each tensor type (tied and not) with a char tokenizer, and
// one with metadata of every type.
static int write_seeds(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_gguf_replay: cannot create '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 8, c.block_size = 4, c.n_layer = 1, c.n_head = c.n_kv_head = 1;
    c.n_embd = 32, c.dropout = 0, c.positional = TT_POS_LEARNED;
    c.norm = TT_NORM_LAYERNORM, c.activation = TT_ACT_GELU_TANH, c.bias = c.qkv_bias = true;
    const tt_ggml_type types[] = {TT_GGML_F32, TT_GGML_F16, TT_GGML_BF16, TT_GGML_Q8_0,
                                  TT_GGML_Q4_0};
    tt_char_vocab v;
    tt_vocab_from_chars(&v, (const unsigned char *)"abcdefg\n", 8);
    tt_tokenizer tok;
    tt_tokenizer_init_char(&tok, &v);
    int fails = 0;
    for (int k = 0; k < 5; k++) {
        c.tie_weights = k % 2 == 0;
        tt_rng rng;
        tt_rng_seed(&rng, (uint64_t)k);
        tt_gpt m;
        tt_gpt_init(&m, &c, &rng);
        tt_gguf_writer w;
        tt_gguf_writer_init(&w);
        fails += tt_gpt_gguf_add(&m, &w, types[k]) != TT_OK;
        tt_tokenizer_gguf_add(&tok, &w, c.vocab_size);
        char path[512];
        snprintf(path, sizeof path, "%s/seed-gpt2-%s", dir, tt_ggml_type_name(types[k]));
        fails += tt_gguf_writer_save(&w, path) != TT_OK;
        tt_gguf_writer_free(&w);
        tt_gpt_free(&m);
    }
    tt_tokenizer_free(&tok);
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    for (int t = 0; t < TT_GGUF_TYPE_COUNT; t++) {
        if (t == TT_GGUF_STRING || t == TT_GGUF_ARRAY) continue;
        char key[32];
        snprintf(key, sizeof key, "k.%s", tt_gguf_type_name(t));
        tt_gguf_writer_set_num(&w, key, (tt_gguf_type)t, t == TT_GGUF_BOOL ? 1 : -5, 0.5);
    }
    const char *strs[] = {"a", "bc"};
    tt_gguf_writer_set_array(&w, "k.strs", TT_GGUF_STRING, strs, 2);
    const int32_t ints[] = {1, -2, 3};
    tt_gguf_writer_set_array(&w, "k.ints", TT_GGUF_INT32, ints, 3);
    tt_gguf_writer_set_u32(&w, "general.alignment", 64);
    char path[512];
    snprintf(path, sizeof path, "%s/seed-metadata", dir);
    fails += tt_gguf_writer_save(&w, path) != TT_OK;
    tt_gguf_writer_free(&w);
    if (fails) fprintf(stderr, "fuzz_gguf_replay: %s\n", tt_last_error());
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_gguf_replay FILE...  |  fuzz_gguf_replay --write-seeds "
                "DIR\n");
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    int opened = 0;
    for (int i = 1; i < argc; i++) {
        size_t n;
        unsigned char *buf;
        if (tt_read_file(argv[i], &buf, &n) != TT_OK) {
            fprintf(stderr, "fuzz_gguf_replay: %s\n", tt_last_error());
            return 1;
        }
        static const unsigned char empty[1];
        LLVMFuzzerTestOneInput(buf ? buf : empty, n);
        tt_gguf f;
        if (tt_gguf_open_mem(&f, buf ? (const void *)buf : empty, n, argv[i]) == TT_OK) opened++;
        tt_gguf_close(&f);
        free(buf);
    }
    printf("fuzz_gguf_replay: %d inputs ran clean (%d of them valid files)\n", argc - 1, opened);
    return 0;
}
#endif  // TT_FUZZ_REPLAY
