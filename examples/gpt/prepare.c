// gpt's prepare command: text files tokenized once into token shards (data/shards.h) that
// train reads memory-mapped. Each file is a document; a directory gives its files in name
// order. The documents stream through: one is in memory at a time.
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// ---- the documents ----

// The regular files of directory dir (not hidden ones, not its subdirectories), in name order.
static void docs_of_dir(tt_path_list *l, const char *dir) {
    size_t first = l->n;
    if (tt_path_list_dir(l, dir, NULL) != TT_OK) die_usage("--data: %s", tt_last_error());
    if (l->n == first) die_usage("--data: directory '%s' holds no files; pass text files", dir);
}

static void docs_add(tt_path_list *l, const char *path) {
    if (tt_path_list_add(l, path, NULL) != TT_OK) die("%s", tt_last_error());
}

// Every document of --data (the default corpus when none is given), in order.
static void list_docs(tt_path_list *l) {
    if (opt.inputs.n == 0) {
        docs_add(l, data_file(DEFAULT_DATA));
        return;
    }
    for (int i = 0; i < opt.inputs.n; i++) {
        struct stat sb;
        if (stat(opt.inputs.v[i], &sb) == 0 && S_ISDIR(sb.st_mode))
            docs_of_dir(l, opt.inputs.v[i]);
        else
            docs_add(l, opt.inputs.v[i]);
    }
}

// A document's bytes (NULL, 0 for an empty file); exits with --data's message otherwise.
static unsigned char *read_doc(const char *path, size_t *n) {
    unsigned char *text;
    tt_status st = tt_read_file(path, &text, n);
    if (st != TT_OK) die_usage("--data: %s; pass readable text files", tt_last_error());
    return text;
}

// ---- the output ----

// The shards' name: the first --data's base name without its extension.
static void shard_name(const tt_path_list *l, char *buf, size_t cap) {
    const char *p = opt.inputs.n ? opt.inputs.v[0] : l->v[0];
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    const char *base = p;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '/') base = p + i + 1;
    size_t len = (size_t)(p + n - base);
    const char *dot = memchr(base, '.', len);
    if (dot && dot > base) len = (size_t)(dot - base);
    snprintf(buf, cap, "%.*s", (int)len, base);
    if (!buf[0] || strcmp(buf, ".") == 0) snprintf(buf, cap, "data");
}

// Refuses an --out that is not a directory, and any document that this run would replace or
// remove there: a shard of this name or the tokenizer file.
static void check_out(const tt_path_list *l, const char *name) {
    struct stat sb;
    if (stat(opt.out, &sb) == 0 && !S_ISDIR(sb.st_mode))
        die_usage(
            "--out '%s' is a file; prepare writes a directory of shards, so pick a "
            "directory (a new one is created)",
            opt.out);
    make_dirs(opt.out, "--out");
    DIR *d = opendir(opt.out);
    if (!d) die("cannot open --out '%s': %s", opt.out, strerror(errno));
    size_t nl = strlen(name);
    char path[4200];
    for (struct dirent *e; (e = readdir(d));) {
        const char *f = e->d_name;
        bool ours = strcmp(f, SHARDS_TOKENIZER) == 0 ||
                    (strncmp(f, name, nl) == 0 && f[nl] == '_' &&
                     (strncmp(f + nl, "_train_", 7) == 0 || strncmp(f + nl, "_val_", 5) == 0));
        snprintf(path, sizeof path, "%s/%s", opt.out, f);
        struct stat ob;
        if (!ours || stat(path, &ob) != 0) continue;
        for (size_t i = 0; i < l->n; i++)
            if (stat(l->v[i], &sb) == 0 && sb.st_dev == ob.st_dev && sb.st_ino == ob.st_ino)
                die_usage(
                    "--data '%s' is '%s', which prepare would replace; pick another "
                    "--out",
                    l->v[i], path);
    }
    closedir(d);
}

// ---- tokenizing ----

// --tokenizer's (gpt2 or a vocab file), or char: the distinct bytes of every document.
static void open_tokenizer(tt_tokenizer *t, const tt_path_list *l) {
    if (opt.tokenizer && strcmp(opt.tokenizer, "char") != 0) {
        tok_open(t, opt.tokenizer);
        return;
    }
    bool seen[256] = {false};
    for (size_t i = 0; i < l->n; i++) {
        size_t n;
        unsigned char *text = read_doc(l->v[i], &n);
        for (size_t k = 0; k < n; k++) seen[text[k]] = true;
        free(text);
    }
    unsigned char chars[256];
    int size = 0;
    for (int b = 0; b < 256; b++)
        if (seen[b]) chars[size++] = (unsigned char)b;
    tt_char_vocab v;
    if (size == 0 || tt_vocab_from_chars(&v, chars, size) != TT_OK)
        die_usage("--data: every document is empty; pass text files");
    tt_tokenizer_init_char(t, &v);
}

// Every non-empty document into w; returns how many there were.
static int add_docs(tt_shard_writer *w, tt_tokenizer *t, const tt_path_list *l) {
    int added = 0;
    for (size_t i = 0; i < l->n; i++) {
        size_t n, n_ids;
        unsigned char *text = read_doc(l->v[i], &n);
        if (n == 0) continue;
        int32_t *ids =
            tok_encode(t, (const char *)text, n, &n_ids, "--data", "", "pass text files");
        free(text);
        tt_status st = tt_shard_writer_add(w, ids, n_ids);
        tt_free(ids);
        if (st != TT_OK) {
            tt_shard_writer_abort(w);
            die("'%s': %s", l->v[i], tt_last_error());
        }
        added++;
    }
    return added;
}

int cmd_prepare(void) {
    if (!given("--out")) die_usage("prepare needs --out DIR (e.g. --out out/shards)");
    tt_path_list docs = {0};
    list_docs(&docs);
    char name[256], tokfile[4200];
    shard_name(&docs, name, sizeof name);
    check_out(&docs, name);
    tt_tokenizer t;
    open_tokenizer(&t, &docs);
    int32_t eot = t.kind == TT_TOKENIZER_CHAR ? -1 : t.bpe.eot_id;
    tt_shard_writer_opts o = {t.n_vocab > 65536 ? 4 : 2, opt.shard_tokens, TRAIN_FRAC, eot};
    tt_shard_writer *w;
    if (tt_shard_writer_open(&w, opt.out, name, &o) != TT_OK) die("--out: %s", tt_last_error());
    double t0 = now_s();
    int n_docs = add_docs(w, &t, &docs);
    tt_shards_written done;
    tt_status st = tt_shard_writer_finish(w, &done);
    if (st == TT_ERR_ARG) die_usage("--data: %s", tt_last_error());
    if (st != TT_OK) die("%s", tt_last_error());
    snprintf(tokfile, sizeof tokfile, "%s/%s", opt.out, SHARDS_TOKENIZER);
    if (tt_tokenizer_save(&t, tokfile) != TT_OK) die("%s", tt_last_error());
    printf("prepared documents=%d tokens=%lld train=%lld val=%lld files=%d+%d dtype=%s\n", n_docs,
           (long long)done.n_tokens, (long long)done.n_train, (long long)done.n_val,
           done.n_val_files, done.n_train_files, o.width == 2 ? "uint16" : "uint32");
    check_stdout();
    fprintf(stderr, "%s: %s tokens in %.1f s: %s/%s_val_*.bin, %s_train_*.bin and %s\n", prog->name,
            tt_tokenizer_name(&t), now_s() - t0, opt.out, name, name, tokfile);
    tt_tokenizer_free(&t);
    tt_path_list_free(&docs);
    return 0;
}
