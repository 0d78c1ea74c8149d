// The GPT programs' sample command: the prompt and the text a checkpoint (or GPT-2's weights)
// generates after it, streamed as it comes, with temperature, top-k, top-p, min-p, a
// repetition penalty, stop strings, the KV cache and int8 weights; or the texts of a file of
// prompts decoded N at a time in one batch (a generation session). The speed on stderr.
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The prompts: --prompt's, or the lines of --prompts FILE (a final newline ends the last
// line; an empty line is refused, as an empty --prompt).
typedef struct prompt_set {
    char *buf;         // the file's bytes (NULL for --prompt)
    const char **text;
    size_t *len;
    int n;
} prompt_set;

static void read_prompts(prompt_set *ps) {
    memset(ps, 0, sizeof *ps);
    ps->text = malloc(sizeof *ps->text);
    ps->len = malloc(sizeof *ps->len);
    if (!ps->text || !ps->len) die("out of memory");
    if (!opt.prompts) {
        ps->text[0] = opt.prompt;
        ps->len[0] = strlen(opt.prompt);
        ps->n = 1;
        return;
    }
    FILE *fp = fopen(opt.prompts, "rb");
    if (!fp) die_usage("--prompts: cannot open '%s': %s", opt.prompts, strerror(errno));
    size_t cap = 1 << 12, n = 0, got;
    ps->buf = malloc(cap + 1);
    while (ps->buf && (got = fread(ps->buf + n, 1, cap - n, fp)) > 0)
        if ((n += got) == cap) ps->buf = realloc(ps->buf, (cap *= 2) + 1);
    fclose(fp);
    if (!ps->buf) die("out of memory");
    if (n > 0 && ps->buf[n - 1] == '\n') n--;
    ps->buf[n] = '\n';
    for (size_t at = 0; at <= n;) {
        char *end = memchr(ps->buf + at, '\n', n + 1 - at);
        ps->text = realloc(ps->text, (size_t)(ps->n + 1) * sizeof *ps->text);
        ps->len = realloc(ps->len, (size_t)(ps->n + 1) * sizeof *ps->len);
        if (!ps->text || !ps->len) die("out of memory");
        ps->text[ps->n] = ps->buf + at;
        ps->len[ps->n] = (size_t)(end - (ps->buf + at));
        if (ps->len[ps->n] == 0)
            die_usage("--prompts: line %d of '%s' is empty; give one prompt per line", ps->n + 1,
                      opt.prompts);
        ps->n++;
        at = (size_t)(end - ps->buf) + 1;
    }
}

// The ids of prompt i, checked against the model's vocab.
static int32_t *encode_prompt(train_state *s, const prompt_set *ps, int i, const char *path,
                              size_t *n_ids) {
    char of[4200];
    snprintf(of, sizeof of, " of '%s'", path);
    char what[64];
    snprintf(what, sizeof what, opt.prompts ? "--prompts line %d" : "--prompt", i + 1);
    int32_t *ids = tok_encode(&s->tok, ps->text[i], ps->len[i], n_ids, what, of,
                              "use only characters of the training text");
    for (size_t j = 0; j < *n_ids; j++)
        if (ids[j] >= s->cfg.vocab_size)
            die_usage("%s: its token %lld is outside the vocabulary of %lld of '%s'; use a prompt "
                      "of the model's tokens", what, (long long)ids[j],
                      (long long)s->cfg.vocab_size, path);
    return ids;
}

// ---- output: the first unfinished prompt streams; later ones are kept until their turn ----

typedef struct printer {
    const prompt_set *ps;
    char **out;      // per prompt, the text released so far
    size_t *n_out;
    bool *done;
    int cur;         // the prompt printing now
    int64_t tokens;  // sampled, all prompts
} printer;

// Prints prompt i and the text it has so far (the start of its turn).
static void print_head(printer *p, int i) {
    fwrite(p->ps->text[i], 1, p->ps->len[i], stdout);
    if (p->n_out[i] > 0) fwrite(p->out[i], 1, p->n_out[i], stdout);
    check_stdout();
}

// Ends the current prompt's line, then prints the finished ones after it whole and starts the
// next running one.
static void advance(printer *p) {
    while (p->cur < p->ps->n && p->done[p->cur]) {
        fputc('\n', stdout);
        check_stdout();
        if (++p->cur < p->ps->n) print_head(p, p->cur);
    }
}

static void on_event(const tt_gpt_token_event *e, void *ctx) {
    printer *p = ctx;
    p->tokens++;
    if (e->text_len > 0) {
        char *o = realloc(p->out[e->seq], p->n_out[e->seq] + e->text_len);
        if (!o) die("out of memory");
        memcpy(o + p->n_out[e->seq], e->text, e->text_len);
        p->out[e->seq] = o;
        p->n_out[e->seq] += e->text_len;
        if (e->seq == p->cur) fwrite(e->text, 1, e->text_len, stdout);
    }
    if (e->seq == p->cur) check_stdout();  // a full disk or a closed stdout stops at once
    if (e->finish == TT_GPT_RUNNING) return;
    p->done[e->seq] = true;
    advance(p);
}

// The request of every prompt: the sampling flags, --tokens, --stop.
static tt_gpt_request make_request(const train_state *s) {
    tt_sample_opts so = tt_sample_opts_default();
    so.temperature = opt.temperature;
    so.top_k = (int)opt.top_k;
    so.top_p = opt.top_p;
    so.min_p = opt.min_p;
    so.repetition_penalty = opt.repeat_penalty;
    so.use_cache = !opt.no_cache;
    so.n_vocab = s->tok.n_vocab;  // a padded vocab's extra ids have no text
    return (tt_gpt_request){.sample = so, .max_new_tokens = opt.tokens,
                            .stop_strings = opt.stops.v, .n_stop_strings = opt.stops.n};
}

// Decodes every prompt, --batch of them at a time (prompt i seeded with --seed + i).
static void run_prompts(tt_gpt *gpt, train_state *s, const prompt_set *ps, const char *path,
                        printer *p) {
    int streams = given("--batch") ? (int)opt.batch : 1;
    tt_gpt_request r = make_request(s);
    tt_gpt_session *ses = tt_gpt_session_new(gpt, &(tt_gpt_session_config){
        .tokenizer = &s->tok, .on_token = on_event, .ctx = p});
    print_head(p, 0);
    for (int next = 0; next < ps->n || tt_gpt_session_active(ses) > 0;) {
        while (next < ps->n && tt_gpt_session_active(ses) < streams) {
            size_t n_ids;
            int32_t *ids = encode_prompt(s, ps, next, path, &n_ids);
            r.sample.seed = (uint64_t)opt.seed + (uint64_t)next++;
            tt_gpt_session_add(ses, ids, (int64_t)n_ids, &r);
            tt_free(ids);
        }
        tt_gpt_session_step(ses);
    }
    tt_gpt_session_free(ses);
}

int cmd_sample(void) {
    tt_checkpoint ck;
    train_state s;
    tt_gpt gpt;
    const char *path = open_model("sample", &gpt, &s, &ck);
    tt_ckpt_free(&ck);
    if (given("--block") && opt.window > s.cfg.block_size)
        die_usage("--block %lld is above the block size %lld of '%s'; use --block <= %lld",
                  (long long)opt.window, (long long)s.cfg.block_size, path,
                  (long long)s.cfg.block_size);
    if (given("--batch") && !opt.prompts)
        die_usage(prog->char_only ? "--batch of sample decodes the prompts of gpt sample's "
                  "--prompts FILE together; run gpt sample for it" : "--batch decodes the prompts "
                  "of --prompts FILE together; give --prompts");
    if (opt.prompts && given("--prompt"))
        die_usage("--prompt and --prompts both given; give one");
    int streams = given("--batch") ? (int)opt.batch : 1;
    check_memory(&s.cfg, streams, s.cfg.block_size, false);
    if (strlen(opt.prompt) == 0)
        die_usage("--prompt is empty; give at least one character (default: newline)");
    prompt_set ps;
    read_prompts(&ps);
    for (int i = 0; i < ps.n; i++) {  // every prompt checked before any output
        size_t n_ids;
        tt_free(encode_prompt(&s, &ps, i, path, &n_ids));
    }
    // A smaller context window than the model's: generation slides over --block tokens.
    if (given("--block")) gpt.cfg.block_size = opt.window;
    apply_quantize(&gpt);

    printer p = {&ps, calloc((size_t)ps.n, sizeof(char *)), calloc((size_t)ps.n, sizeof(size_t)),
                 calloc((size_t)ps.n, sizeof(bool)), 0, 0};
    if (!p.out || !p.n_out || !p.done) die("out of memory");
    double t0 = now_s();
    if (opt.tokens > 0) {
        run_prompts(&gpt, &s, &ps, path, &p);
    } else {  // nothing to generate: the prompts alone
        for (int i = 0; i < ps.n; i++) p.done[i] = true;
        print_head(&p, 0);
        advance(&p);
    }
    double dt = now_s() - t0;
    fprintf(stderr, "sampled %lld tokens in %.3f s (%.1f tokens/s, KV cache %s, %d threads, "
            "%s)\n", (long long)p.tokens, dt, dt > 0 ? (double)p.tokens / dt : 0.0,
            opt.no_cache ? "off" : "on", nthreads(), tt_quant_name(tt_gpt_quantization(&gpt)));
    for (int i = 0; i < ps.n; i++) free(p.out[i]);
    free(p.out);
    free(p.n_out);
    free(p.done);
    free(ps.text);
    free(ps.len);
    free(ps.buf);
    tt_gpt_free(&gpt);
    tt_tokenizer_free(&s.tok);
    return 0;
}
