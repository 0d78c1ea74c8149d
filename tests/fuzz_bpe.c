// libFuzzer target over the BPE tokenizer (data/bpe.c, data/bpe_train.c). The first input byte
// picks the mode: 0 a trained vocab file (tt_bpe_load) of the rest; 1 GPT-2's pair
// (tt_bpe_load_gpt2), the rest split at its first 0 byte into encoder.json and vocab.bpe;
// 2 encoding the rest with a small vocab trained once. A failed load must return an error
// status with a one-line message naming the file and leave the struct zeroed; a load that
// succeeds must give a tokenizer whose decode(encode(x)) == x for fixed strings and for bytes
// of the input (a trained one also saves and reloads to the same merges). Any abort, leak or
// sanitizer report is a crash. Not a Check suite: `make fuzz` builds it with clang.
//
//     make fuzz                              # every target, FUZZ_SECONDS each
//     build-fuzz/fuzz_bpe crash-<sha1>       # replay one input
//
// Compiled with -DTT_FUZZ_REPLAY (any C compiler, no libFuzzer) it has its own main instead:
// `fuzz_bpe_replay FILE...` runs each file through the same checks (make test replays
// tests/fuzz_corpus_bpe/ this way) and `--write-seeds DIR` writes that corpus's seed-* files.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/bpe.h"
#include "tinytorch.h"
#include "fuzz_util.h"
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MODE_VOCAB, MODE_GPT2, MODE_ENCODE, N_MODES };

// ---- state ----

static tt_bpe trained;  // mode 2's vocab, trained once
static int n_loaded;    // inputs of modes 0 and 1 that loaded (the replay reports it)
static const char TRAIN_TEXT[] =
    "the cat sat on the mat; the rat ate the hat. 1234 12 34 1234!\n"
    "  \t\n<|endoftext|> caf\xc3\xa9 na\xc3\xafve \xe2\x98\x83\xe2\x98\x83 the the the";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char *const files[] = {"in.vocab", "rt.vocab", "encoder.json", "vocab.bpe", NULL};
    fuzz_setup("bpe", files);
    if (tt_bpe_train(&trained, TRAIN_TEXT, sizeof TRAIN_TEXT - 1, 40) != TT_OK) {
        fprintf(stderr, "fuzz: training the fixed vocab failed: %s\n", tt_last_error());
        exit(1);
    }
    return 0;
}

// ---- invariants ----

static void write_file(const char *path, const uint8_t *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) fuzz_crash("cannot write %s", path);
}

// A failed load: an error status, a non-empty one-line message naming one of the files, and a
// zeroed struct.
static void check_failed(const tt_bpe *bpe, tt_status s, const char *file1, const char *file2) {
    static const tt_bpe zero;
    const char *m = tt_last_error();
    if ((s != TT_ERR_FORMAT && s != TT_ERR_MISMATCH) || !m[0] || strpbrk(m, "\n\r") ||
        (!strstr(m, file1) && !(file2 && strstr(m, file2))) || memcmp(bpe, &zero, sizeof zero))
        fuzz_crash("a failed load: status %s, message '%s', struct %s", tt_status_str(s), m,
                   memcmp(bpe, &zero, sizeof zero) ? "not zeroed" : "zeroed");
}

// decode(encode(x)) == x in both modes; every id in range.
static void round_trip(tt_bpe *bpe, const char *x, size_t n) {
    for (int mode = 0; mode < 2; mode++) {
        size_t k, m;
        int32_t *ids = tt_bpe_encode(bpe, x, n, mode ? TT_BPE_ALLOW_SPECIAL : TT_BPE_ORDINARY,
                                     &k);
        if (k > n) fuzz_crash("%zu bytes encode to %zu ids", n, k);
        for (size_t i = 0; i < k; i++)
            if (ids[i] < 0 || ids[i] >= bpe->n_vocab || (mode == 0 && ids[i] == bpe->eot_id))
                fuzz_crash("encode gave id %d (vocab of %d, <|endoftext|> %d)", (int)ids[i],
                           bpe->n_vocab, bpe->eot_id);
        char *back = tt_bpe_decode(bpe, ids, k, &m);
        if (m != n || memcmp(back, x, n) != 0 || back[m] != '\0')
            fuzz_crash("decode(encode(x)) != x for %zu bytes (%zu back, mode %d)", n, m, mode);
        tt_free(back);
        tt_free(ids);
    }
}

static void check_loaded(tt_bpe *bpe, const uint8_t *data, size_t size) {
    static const char *const fixed[] = {
        "", "Hello world", "the cat sat on the mat", " <|endoftext|>x<|endoftext|>",
        "a\r\n\n  b  \t", "caf\xc3\xa9 \xe2\x98\x83 \xff\xfe\x80 12345", "'s'll'VE 's",
    };
    if (bpe->n_vocab < 256 || !bpe->s || bpe->first_merge != 256 ||
        bpe->n_merges < 0 || bpe->n_merges > bpe->n_vocab - 256)
        fuzz_crash("a loaded vocab of %d tokens, %d merges", bpe->n_vocab, bpe->n_merges);
    for (int b = 0; b < 256; b++) {
        size_t len;
        const unsigned char *t = tt_bpe_token(bpe, bpe->byte_id[b], &len);
        if (len != 1 || t[0] != b) fuzz_crash("byte 0x%02x's token is not that byte", b);
    }
    for (int i = 0; i < bpe->n_merges; i++) {
        int32_t a, b;
        tt_bpe_merge(bpe, i, &a, &b);
        size_t la, lb, lab;
        const unsigned char *ta = tt_bpe_token(bpe, a, &la), *tb = tt_bpe_token(bpe, b, &lb);
        const unsigned char *tab = tt_bpe_token(bpe, 256 + i, &lab);
        if (a >= 256 + i || b >= 256 + i || lab != la + lb || memcmp(tab, ta, la) ||
            memcmp(tab + la, tb, lb))
            fuzz_crash("merge %d (%d %d) does not spell token %d", i, (int)a, (int)b, 256 + i);
    }
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        round_trip(bpe, fixed[i], strlen(fixed[i]));
    round_trip(bpe, (const char *)data, size);
    // Again, now from the pre-token cache.
    round_trip(bpe, (const char *)data, size);
}

// A trained vocab saves and reloads to the same merges.
static void check_save_load(const tt_bpe *bpe) {
    char path[96];
    fuzz_path(path, sizeof path, "rt.vocab");
    if (tt_bpe_save(bpe, path) != TT_OK) fuzz_crash("saving a loaded vocab: %s", tt_last_error());
    tt_bpe again;
    if (tt_bpe_load(&again, path) != TT_OK)
        fuzz_crash("reloading a saved vocab: %s", tt_last_error());
    if (again.n_merges != bpe->n_merges || again.n_vocab != bpe->n_vocab)
        fuzz_crash("a saved vocab reloads with %d merges, saved %d", again.n_merges, bpe->n_merges);
    for (int i = 0; i < bpe->n_merges; i++) {
        int32_t a, b, c, d;
        tt_bpe_merge(bpe, i, &a, &b);
        tt_bpe_merge(&again, i, &c, &d);
        if (a != c || b != d) fuzz_crash("merge %d changed through a save", i);
    }
    tt_bpe_free(&again);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int mode = data[0] % N_MODES;
    data++;
    size--;
    if (mode == MODE_ENCODE) {
        round_trip(&trained, (const char *)data, size);
        return 0;
    }
    tt_bpe bpe;
    tt_status s;
    char p1[96], p2[96];
    if (mode == MODE_VOCAB) {
        fuzz_path(p1, sizeof p1, "in.vocab");
        write_file(p1, data, size);
        s = tt_bpe_load(&bpe, p1);
        if (s != TT_OK) check_failed(&bpe, s, p1, NULL);
    } else {
        const uint8_t *zero = memchr(data, 0, size);
        size_t n1 = zero ? (size_t)(zero - data) : size;
        fuzz_path(p1, sizeof p1, "encoder.json");
        fuzz_path(p2, sizeof p2, "vocab.bpe");
        write_file(p1, data, n1);
        write_file(p2, zero ? zero + 1 : data + size, zero ? size - n1 - 1 : 0);
        s = tt_bpe_load_gpt2(&bpe, p1, p2);
        if (s != TT_OK) check_failed(&bpe, s, p1, p2);
    }
    if (s == TT_OK) {
        n_loaded++;
        check_loaded(&bpe, data, size);
        if (mode == MODE_VOCAB) check_save_load(&bpe);
        tt_bpe_free(&bpe);
    }
    return 0;
}

#ifdef TT_FUZZ_REPLAY
// ---- replay and seed corpus (no libFuzzer) ----

static FILE *open_seed(const char *dir, const char *name, int mode) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "fuzz_bpe_replay: cannot create '%s': %s\n", path, strerror(errno));
        exit(1);
    }
    fputc(mode, f);
    return f;
}

static void write_seed(const char *dir, const char *name, int mode, const char *text, size_t n) {
    FILE *f = open_seed(dir, name, mode);
    fwrite(text, 1, n, f);
    fclose(f);
}

// GPT-2's byte -> unicode alphabet (data/bpe.c), as UTF-8 into out; returns its length.
static int gpt2_char(int byte, char *out) {
    int next = 256, c = -1;
    for (int b = 0; b < 256 && c < 0; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        if (b == byte) c = printable ? b : next;
        if (!printable) next++;
    }
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    out[0] = (char)(0xc0 | c >> 6);
    out[1] = (char)(0x80 | (c & 0x3f));
    return 2;
}

// Spells bytes s in GPT-2's alphabet into out (NUL-terminated).
static void gpt2_spell(const char *s, char *out) {
    for (; *s; s++) out += gpt2_char((unsigned char)*s, out);
    *out = '\0';
}

// A GPT-2-shaped pair: the 256 byte tokens, the merges given (each "a|b" in plain bytes),
// <|endoftext|> last; mode 1's encoder.json, a 0 byte, then vocab.bpe.
static void write_gpt2_seed(const char *dir, const char *name, const char *const *merges,
                            int n_merges) {
    FILE *f = open_seed(dir, name, MODE_GPT2);
    char tok[64], a[64], b[64];
    fputc('{', f);
    for (int byte = 0; byte < 256; byte++) {
        char c[3] = {0};
        gpt2_char(byte, c);
        fprintf(f, "%s\"%s\": %d", byte ? ", " : "", strcmp(c, "\"") == 0 ? "\\\"" :
                strcmp(c, "\\") == 0 ? "\\\\" : c, byte);
    }
    for (int i = 0; i < n_merges; i++) {
        const char *sp = strchr(merges[i], '|');
        snprintf(a, sizeof a, "%.*s", (int)(sp - merges[i]), merges[i]);
        snprintf(b, sizeof b, "%s%s", a, sp + 1);
        gpt2_spell(b, tok);
        fprintf(f, ", \"%s\": %d", tok, 256 + i);
    }
    fprintf(f, ", \"<|endoftext|>\": %d}\n", 256 + n_merges);
    fputc(0, f);
    fprintf(f, "#version: 0.2\n");
    for (int i = 0; i < n_merges; i++) {
        const char *sp = strchr(merges[i], '|');
        snprintf(a, sizeof a, "%.*s", (int)(sp - merges[i]), merges[i]);
        gpt2_spell(a, tok);
        gpt2_spell(sp + 1, b);
        fprintf(f, "%s %s\n", tok, b);
    }
    fclose(f);
}

// A trained vocab (valid), GPT-2-shaped pairs (valid and not), broken vocab files, and texts
// to encode; the regress-* files of the corpus are inputs that once failed.
static int write_seeds(const char *dir) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz_bpe_replay: cannot create '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/seed-trained.tmp", dir);
    if (tt_bpe_save(&trained, path) != TT_OK) {
        fprintf(stderr, "fuzz_bpe_replay: %s\n", tt_last_error());
        return 1;
    }
    FILE *in = fopen(path, "rb");
    char buf[4096];
    size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
    if (in) fclose(in);
    remove(path);
    write_seed(dir, "seed-trained", MODE_VOCAB, buf, n);
    static const char chain[] = "tinytorch-bpe 1\nmerges 3\n97 98\n256 99\n257 257\n";
    write_seed(dir, "seed-chain", MODE_VOCAB, chain, sizeof chain - 1);
    static const char empty[] = "tinytorch-bpe 1\nmerges 0\n";
    write_seed(dir, "seed-empty", MODE_VOCAB, empty, sizeof empty - 1);
    static const char dup[] = "tinytorch-bpe 1\nmerges 2\n97 98\n97 98\n";
    write_seed(dir, "bad-dup", MODE_VOCAB, dup, sizeof dup - 1);
    static const char ahead[] = "tinytorch-bpe 1\nmerges 2\n97 257\n256 99\n";
    write_seed(dir, "bad-ahead", MODE_VOCAB, ahead, sizeof ahead - 1);
    const char *const merges[] = {" |t", "h|e", " t|he", " |a", "i|n", "\n|\n", "\xe2|\x98",
                                  "\xe2\x98|\x83", " |\xe2\x98\x83"};
    write_gpt2_seed(dir, "seed-gpt2", merges, 9);
    write_gpt2_seed(dir, "seed-gpt2-nomerges", merges, 0);
    const char *const reordered[] = {"h|e", " |t"};
    write_gpt2_seed(dir, "seed-gpt2-reordered", reordered, 2);
    static const char enc_bad[] = "{\"a\": 0, \"b\": 0}";
    write_seed(dir, "bad-gpt2-json", MODE_GPT2, enc_bad, sizeof enc_bad);  // with its NUL
    static const char text[] = "Hello world <|endoftext|> the  cat\n\n\xff\xc3 caf\xc3\xa9 "
                               "1234567 ;;; \xe2\x98\x83";
    write_seed(dir, "seed-text", MODE_ENCODE, text, sizeof text - 1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_bpe_replay FILE...  |  fuzz_bpe_replay --write-seeds DIR\n");
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        int rc = write_seeds(argv[2]);
        tt_bpe_free(&trained);
        return rc;
    }
    if (fuzz_replay_files("fuzz_bpe_replay", argc, argv)) return 1;
    printf("fuzz_bpe_replay: %d inputs ran clean (%d of them loaded a vocab)\n", argc - 1,
           n_loaded);
    tt_bpe_free(&trained);
    return 0;
}
#endif  // TT_FUZZ_REPLAY
