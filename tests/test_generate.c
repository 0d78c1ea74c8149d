// Check suite of models/gpt's generation sessions and samplers: batched decoding of 8 prompts
// against each alone (greedy and sampled, f32 and bf16 caches), finished sequences leaving the
// batch, the context-window rule in a session, each sampler setting against hand-computed cases
// (min-p, penalties, their window, the order), logprobs, stop tokens and stop strings across
// token boundaries with the streamed text equal to the returned one, the callback order, and
// the abort messages of bad settings.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "data/tokenizer.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_internal.h"

// ---- helpers ----

// A small GPT-2-style model (default) or rope + rmsnorm + GQA + qk_norm + untied (modern).
static void small_model(tt_gpt *m, bool modern, int64_t block, uint64_t seed) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 27;
    c.block_size = block;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_kv_head = modern ? 2 : 4;
    c.n_embd = 32;
    if (modern) {
        c.positional = TT_POS_ROPE;
        c.norm = TT_NORM_RMSNORM;
        c.tie_weights = false;
        c.qk_norm = true;
    }
    tt_rng rng = tt_rng_new(seed);
    ck_assert_msg(tt_gpt_init(m, &c, &rng) == TT_OK, "%s", tt_last_error());
}

// A char tokenizer of the 27 bytes "a" .. "z" and " ": ids 0 .. 26 in byte order (" " first).
static void small_tokenizer(tt_tokenizer *t) {
    tt_char_vocab v;
    const char *chars = " abcdefghijklmnopqrstuvwxyz";
    ck_assert_int_eq(tt_vocab_from_chars(&v, (const unsigned char *)chars, 27), TT_OK);
    tt_tokenizer_init_char(t, &v);
}

// Prompt i of the 8: i + 1 tokens (the last ones up to 13) drawn from seed 100 + i.
static int64_t prompt_of(int i, int32_t *p) {
    tt_rng rng = tt_rng_new(100 + (uint64_t)i);
    int64_t n = i < 7 ? i + 1 : 13;
    for (int64_t j = 0; j < n; j++) p[j] = (int32_t)tt_rng_below(&rng, 27);
    return n;
}

// Decodes the 8 prompts with r in one session (kv_bf16 as given) into out[i] (n_new each).
static void decode_8(tt_gpt *m, const tt_gpt_request *r, bool bf16, int32_t out[8][40]) {
    tt_gpt_session *s = tt_gpt_session_new(m, &(tt_gpt_session_config){.kv_bf16 = bf16});
    int32_t p[16];
    for (int i = 0; i < 8; i++) {
        int64_t n = prompt_of(i, p);
        tt_gpt_request ri = *r;
        ri.sample.seed = r->sample.seed + (uint64_t)i;
        ck_assert_int_eq(tt_gpt_session_add(s, p, n, &ri), i);
    }
    ck_assert_int_eq(tt_gpt_session_active(s), 8);
    tt_gpt_session_run(s);
    for (int i = 0; i < 8; i++) {
        int64_t n;
        const int32_t *t = tt_gpt_session_tokens(s, i, &n);
        ck_assert_int_eq(n, r->max_new_tokens);
        memcpy(out[i], t, (size_t)n * sizeof *t);
        ck_assert_int_eq(tt_gpt_session_finish(s, i), TT_GPT_FINISH_LENGTH);
    }
    tt_gpt_session_free(s);
}

// The same prompt i alone in its own session.
static void decode_alone(tt_gpt *m, const tt_gpt_request *r, bool bf16, int i, int32_t *out) {
    tt_gpt_session *s = tt_gpt_session_new(m, &(tt_gpt_session_config){.kv_bf16 = bf16});
    int32_t p[16];
    int64_t n = prompt_of(i, p);
    tt_gpt_request ri = *r;
    ri.sample.seed = r->sample.seed + (uint64_t)i;
    tt_gpt_session_add(s, p, n, &ri);
    tt_gpt_session_run(s);
    const int32_t *t = tt_gpt_session_tokens(s, 0, &n);
    memcpy(out, t, (size_t)n * sizeof *out);
    tt_gpt_session_free(s);
}

// ---- batched = alone ----

// 8 prompts of lengths 1 .. 7 and 13 with 30 new tokens in a block of 16 (the longer ones pass
// the context-window rule while the others stay in the batch): each gets the tokens it gets
// alone, greedy and sampled, with the f32 cache and with the bf16 one; greedy also equals
// tt_gpt_generate's.
static void check_batch(bool modern) {
    tt_gpt m;
    small_model(&m, modern, 16, 7);
    for (int sampled = 0; sampled < 2; sampled++) {
        tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = 30};
        r.sample.temperature = sampled ? 1.0 : 0.0;
        r.sample.seed = 42;
        for (int bf16 = 0; bf16 < 2; bf16++) {
            int32_t batch[8][40], alone[40];
            decode_8(&m, &r, bf16, batch);
            for (int i = 0; i < 8; i++) {
                decode_alone(&m, &r, bf16, i, alone);
                for (int t = 0; t < 30; t++)
                    ck_assert_msg(batch[i][t] == alone[t], "%s sampled=%d bf16=%d prompt %d "
                                  "token %d: batch %d, alone %d", modern ? "modern" : "gpt2",
                                  sampled, bf16, i, t, batch[i][t], alone[t]);
                if (sampled || bf16) continue;
                int32_t p[16], gen[40];
                int64_t n = prompt_of(i, p);
                tt_rng rng = tt_rng_new(0);
                tt_gpt_generate(&m, p, n, 30, &r.sample, &rng, gen, NULL, NULL);
                ck_assert_int_eq(memcmp(gen, batch[i], 30 * sizeof *gen), 0);
            }
        }
    }
    tt_gpt_free(&m);
}

START_TEST(test_batch_equals_alone_gpt2) { check_batch(false); }
END_TEST

START_TEST(test_batch_equals_alone_modern) { check_batch(true); }
END_TEST

// The bf16 cache holds the f32 cache's tokens on most steps of a greedy run (rounding can flip
// a near tie, so this is a bound, not equality) and half its bytes.
START_TEST(test_bf16_cache_close) {
    tt_gpt m;
    small_model(&m, false, 16, 7);
    tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = 30};
    r.sample.temperature = 0;
    int32_t f[8][40], b[8][40];
    decode_8(&m, &r, false, f);
    decode_8(&m, &r, true, b);
    int first_diff = 30;
    for (int t = 0; t < 30; t++)
        if (f[0][t] != b[0][t]) first_diff = t < first_diff ? t : first_diff;
    ck_assert_int_ge(first_diff, 5);
    int32_t p[16];
    int64_t n = prompt_of(3, p);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        tt_gpt_session *s = tt_gpt_session_new(&m, &(tt_gpt_session_config){.kv_bf16 = bf16});
        tt_gpt_session_add(s, p, n, &r);
        tt_gpt_session_add(s, p, n, &r);
        // per sequence 2 (k, v) x 2 layers x NKV 4 x L 16 x HS 8 elements; bf16 adds the
        // widening buffers of one layer for the 1 row prefilled
        size_t per = 2 * 2 * 4 * 16 * 8;
        ck_assert_uint_eq(tt_gpt_session_kv_bytes(s), bf16 ? 2 * per * 2 + 2 * 4 * 16 * 8 * 4
                                                          : 2 * per * 4);
        tt_gpt_session_free(s);
    }
    tt_gpt_free(&m);
}
END_TEST

// ---- finishing ----

typedef struct events {
    int n;
    int seq[64];
    int32_t token[64];
    tt_gpt_finish finish[64];
    char text[4][256];  // the streamed text of sequences 0 .. 3
    size_t len[4];
    int empty;          // events that released no byte
    double logprob[64];
} events;

static void record(const tt_gpt_token_event *e, void *ctx) {
    events *ev = ctx;
    ck_assert_int_lt(ev->n, 64);
    ev->seq[ev->n] = e->seq;
    ev->token[ev->n] = e->token;
    ev->finish[ev->n] = e->finish;
    ev->logprob[ev->n] = e->logprob;
    ev->n++;
    if (e->seq < 4 && e->text) {
        memcpy(ev->text[e->seq] + ev->len[e->seq], e->text, e->text_len);
        ev->len[e->seq] += e->text_len;
    }
    if (e->text_len == 0) ev->empty++;
}

// Three sequences with 2, 4 and 3 new tokens: the callback runs step by step and within a step
// in sequence order; each sequence leaves the batch when done (its cache freed).
START_TEST(test_callback_order_and_finish) {
    tt_gpt m;
    small_model(&m, false, 16, 3);
    events ev = {0};
    tt_gpt_session *s = tt_gpt_session_new(&m, &(tt_gpt_session_config){.on_token = record,
                                                                         .ctx = &ev});
    int32_t p[] = {1, 2, 3};
    int64_t lens[] = {2, 4, 3};
    for (int i = 0; i < 3; i++) {
        tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = lens[i]};
        tt_gpt_session_add(s, p, 3, &r);
    }
    size_t per_seq = tt_gpt_session_kv_bytes(s) / 3;
    ck_assert_int_eq(tt_gpt_session_step(s), 3);
    ck_assert_int_eq(tt_gpt_session_step(s), 2);  // sequence 0 finished
    ck_assert_uint_eq(tt_gpt_session_kv_bytes(s), 2 * per_seq);
    ck_assert_int_eq(tt_gpt_session_finish(s, 0), TT_GPT_FINISH_LENGTH);
    ck_assert_int_eq(tt_gpt_session_finish(s, 1), TT_GPT_RUNNING);
    ck_assert_int_eq(tt_gpt_session_step(s), 1);
    ck_assert_int_eq(tt_gpt_session_step(s), 0);
    ck_assert_int_eq(tt_gpt_session_step(s), 0);  // nothing left: no event
    ck_assert_uint_eq(tt_gpt_session_kv_bytes(s), 0);
    int want[] = {0, 1, 2, 0, 1, 2, 1, 2, 1};
    ck_assert_int_eq(ev.n, 9);
    for (int i = 0; i < 9; i++) ck_assert_int_eq(ev.seq[i], want[i]);
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(ev.finish[i], i == 3 || i >= 7 ? TT_GPT_FINISH_LENGTH : TT_GPT_RUNNING);
    for (int i = 0; i < 9; i++) ck_assert(isnan(ev.logprob[i]));  // not asked for
    tt_gpt_session_free(s);
    tt_gpt_free(&m);
}
END_TEST

// A stop token ends its sequence at once (kept in the tokens, not in the text); the other
// sequence runs on.
START_TEST(test_stop_token) {
    tt_gpt m;
    tt_tokenizer tok;
    small_model(&m, false, 16, 3);
    small_tokenizer(&tok);
    int32_t p[] = {5, 6, 7}, full[12];
    tt_rng rng = tt_rng_new(0);
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 0;
    tt_gpt_generate(&m, p, 3, 12, &o, &rng, full, NULL, NULL);
    int at = 4;  // the first time full[4] appears
    for (int j = 0; j < 4 && at == 4; j++)
        if (full[j] == full[4]) at = j;
    tt_gpt_session *s = tt_gpt_session_new(&m, &(tt_gpt_session_config){.tokenizer = &tok});
    tt_gpt_request r = {.sample = o, .max_new_tokens = 12, .stop_tokens = &full[at],
                        .n_stop_tokens = 1};
    tt_gpt_session_add(s, p, 3, &r);
    r.n_stop_tokens = 0;
    tt_gpt_session_add(s, p, 3, &r);
    tt_gpt_session_run(s);
    int64_t n;
    const int32_t *t = tt_gpt_session_tokens(s, 0, &n);
    ck_assert_int_eq(n, at + 1);
    ck_assert_int_eq(memcmp(t, full, (size_t)n * sizeof *t), 0);
    ck_assert_int_eq(tt_gpt_session_finish(s, 0), TT_GPT_FINISH_STOP_TOKEN);
    size_t len;
    const char *text = tt_gpt_session_text(s, 0, &len);
    ck_assert_uint_eq(len, (size_t)at);
    for (int j = 0; j < at; j++) ck_assert_int_eq(text[j], " abcdefghijklmnopqrstuvwxyz"[full[j]]);
    t = tt_gpt_session_tokens(s, 1, &n);
    ck_assert_int_eq(n, 12);
    ck_assert_int_eq(memcmp(t, full, 12 * sizeof *t), 0);
    tt_gpt_session_free(s);
    tt_tokenizer_free(&tok);
    tt_gpt_free(&m);
}
END_TEST

// The context-window rule per sequence: in a block of 8, 40 tokens after prompts of 3 and 11
// (cut to its last 8) equal the full recompute's under the same rule (use_cache off).
START_TEST(test_window_rule_in_session) {
    tt_gpt m;
    small_model(&m, true, 8, 5);
    int32_t p[11] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = 40};
    r.sample.temperature = 0;
    tt_gpt_session *s = tt_gpt_session_new(&m, NULL);
    tt_gpt_session_add(s, p, 3, &r);
    tt_gpt_session_add(s, p, 11, &r);
    tt_gpt_session_run(s);
    r.sample.use_cache = false;
    tt_gpt_session *u = tt_gpt_session_new(&m, NULL);
    tt_gpt_session_add(u, p, 3, &r);
    tt_gpt_session_add(u, p + 3, 8, &r);
    tt_gpt_session_run(u);
    for (int i = 0; i < 2; i++) {
        int64_t n1, n2;
        const int32_t *a = tt_gpt_session_tokens(s, i, &n1), *b = tt_gpt_session_tokens(u, i, &n2);
        ck_assert_int_eq(n1, 40);
        ck_assert_int_eq(n2, 40);
        ck_assert_int_eq(memcmp(a, b, 40 * sizeof *a), 0);
    }
    tt_gpt_session_free(s);
    tt_gpt_session_free(u);
    tt_gpt_free(&m);
}
END_TEST

// ---- stop strings and streaming ----

// Greedy text of prompt {5, 6, 7} (30 tokens) with the given stop strings, streamed into ev.
static const char *stop_run(tt_gpt *m, tt_tokenizer *tok, const char *const *stops, int n,
                            events *ev, tt_gpt_session **out) {
    *out = tt_gpt_session_new(m, &(tt_gpt_session_config){.tokenizer = tok, .on_token = record,
                                                           .ctx = ev});
    tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = 30,
                        .stop_strings = stops, .n_stop_strings = n};
    r.sample.temperature = 0;
    int32_t p[] = {5, 6, 7};
    tt_gpt_session_add(*out, p, 3, &r);
    tt_gpt_session_run(*out);
    return tt_gpt_session_text(*out, 0, NULL);
}

// A stop string of 3 bytes taken from the middle of the greedy text (so it spans 3 tokens)
// cuts the text just before it; a string that starts matching and then fails holds bytes
// back and releases them later; in every case the streamed text equals the returned one.
START_TEST(test_stop_strings) {
    tt_gpt m;
    tt_tokenizer tok;
    small_model(&m, false, 64, 3);
    small_tokenizer(&tok);
    events ev = {0};
    tt_gpt_session *s;
    char full[64];
    strcpy(full, stop_run(&m, &tok, NULL, 0, &ev, &s));
    tt_gpt_session_free(s);
    ck_assert_uint_eq(strlen(full), 30);
    ck_assert_int_eq(ev.empty, 0);  // no stop string: nothing held back

    char stop[4] = {full[10], full[11], full[12], 0};
    size_t first = (size_t)(strstr(full, stop) - full);
    memset(&ev, 0, sizeof ev);
    const char *cut = stop_run(&m, &tok, (const char *[]){"zzzzzz", stop}, 2, &ev, &s);
    ck_assert_uint_eq(strlen(cut), first);
    ck_assert_int_eq(strncmp(cut, full, first), 0);
    ck_assert_int_eq(tt_gpt_session_finish(s, 0), TT_GPT_FINISH_STOP_STRING);
    ck_assert_uint_eq(ev.len[0], first);
    ck_assert_int_eq(memcmp(ev.text[0], cut, first), 0);
    ck_assert_int_eq(ev.n, (int)first + 3);  // the stop string's 3 tokens were sampled
    tt_gpt_session_free(s);

    char never[4] = {full[10], full[11], '#', 0};  // starts like the text, never completes
    memset(&ev, 0, sizeof ev);
    const char *all = stop_run(&m, &tok, (const char *[]){never}, 1, &ev, &s);
    ck_assert_str_eq(all, full);
    ck_assert_uint_eq(ev.len[0], 30);
    ck_assert_int_eq(memcmp(ev.text[0], full, 30), 0);
    ck_assert_int_ge(ev.empty, 2);  // full[10] and full[11] were held back
    tt_gpt_session_free(s);
    tt_tokenizer_free(&tok);
    tt_gpt_free(&m);
}
END_TEST

// ---- samplers against hand-computed cases ----

// tt__sample_f64 on a copy of logits (V) with o and history hist (n).
static tt__sample_result sample(const double *logits, int64_t V, const tt_sample_opts *o,
                                const int32_t *hist, int64_t n, tt_rng *rng) {
    double p[16];
    memcpy(p, logits, (size_t)V * sizeof *p);
    return tt__sample_f64(p, V, o, hist, n, true, rng);
}

// The token the inverse CDF picks at uniform u over probabilities q (n), zeros skipped.
static int32_t inverse_cdf(const double *q, int n, double u) {
    double total = 0, cum = 0;
    for (int i = 0; i < n; i++) total += q[i];
    u *= total;
    int32_t tok = -1;
    for (int i = 0; i < n; i++) {
        if (q[i] <= 0) continue;
        tok = i;
        cum += q[i];
        if (u < cum) break;
    }
    return tok;
}

// Min-p 0.2 on probabilities {0.5, 0.3, 0.15, 0.05}: 0.05 < 0.2 * 0.5 is cut, the others keep
// their mass (drawn over 0.95). At temperature 2 the probabilities flatten to ~ {0.36, 0.28,
// 0.2, 0.11}: 0.11 >= 0.2 * 0.36 survives, so min-p runs after the temperature (Hugging Face's
// order; llama.cpp's default chain cuts before it).
START_TEST(test_min_p) {
    double pr[4] = {0.5, 0.3, 0.15, 0.05}, lg[4];
    for (int i = 0; i < 4; i++) lg[i] = log(pr[i]);
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 1;
    o.top_k = 0;
    o.min_p = 0.2;
    tt_rng rng = tt_rng_new(9);
    int seen3 = 0;
    for (int t = 0; t < 300; t++) {
        tt_rng peek = rng;
        double u = tt_rng_uniform(&peek);
        double kept[4] = {0.5, 0.3, 0.15, 0};
        ck_assert_int_eq(sample(lg, 4, &o, NULL, 0, &rng).token, inverse_cdf(kept, 4, u));
    }
    o.temperature = 2;
    for (int t = 0; t < 300; t++) seen3 += sample(lg, 4, &o, NULL, 0, &rng).token == 3;
    ck_assert_int_gt(seen3, 10);
    o.min_p = 1;  // only the most likely token
    for (int t = 0; t < 50; t++) ck_assert_int_eq(sample(lg, 4, &o, NULL, 0, &rng).token, 0);
}
END_TEST

// Repetition 2 on logits {2, -1, 0.5, 1.9} with tokens 0 and 1 seen (1 twice): {1, -2, 0.5,
// 1.9}, once per token; greedy picks 3. Presence 0.1 and frequency 0.5 on {3, 2.7, 0} with 0
// seen twice and 1 once: {1.9, 2.1, 0} -> 1. The window: only the last token counts.
START_TEST(test_penalties) {
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 0;
    tt_rng rng = tt_rng_new(1);
    double a[4] = {2, -1, 0.5, 1.9};
    int32_t ha[] = {1, 0, 1};
    ck_assert_int_eq(sample(a, 4, &o, ha, 3, &rng).token, 0);
    o.repetition_penalty = 2;
    ck_assert_int_eq(sample(a, 4, &o, ha, 3, &rng).token, 3);
    double b[4] = {2, -1, 0.5, 1.1};  // 2 / 2 = 1 < 1.1, and not / 4 for the repeat of 1
    ck_assert_int_eq(sample(b, 4, &o, ha, 3, &rng).token, 3);
    double c[4] = {-3, -0.45, -3, -0.95};  // -0.45 * 2 = -0.9 > -0.95: token 1 only doubled
    ck_assert_int_eq(sample(c, 4, &o, ha, 3, &rng).token, 1);
    o.repetition_penalty = 1;
    o.presence_penalty = 0.1;
    o.frequency_penalty = 0.5;
    double d[3] = {3, 2.7, 0};
    int32_t hd[] = {0, 1, 0};
    ck_assert_int_eq(sample(d, 3, &o, hd, 3, &rng).token, 1);
    o.penalty_last_n = 1;  // only the last 0: 3 - 0.6 = 2.4 < 2.7 still
    ck_assert_int_eq(sample(d, 3, &o, hd, 3, &rng).token, 1);
    double e[3] = {3, 2.7, 0};
    int32_t he[] = {0, 0, 1};
    ck_assert_int_eq(sample(e, 3, &o, he, 3, &rng).token, 0);  // 0 outside the window
    o.penalty_last_n = 0;
    ck_assert_int_eq(sample(e, 3, &o, he, 3, &rng).token, 1);  // 3 - 1.1 < 2.7 - 0.6
    // the penalties come first: with top_k 1 after them the penalized argmax is the only one
    o.temperature = 1;
    o.top_k = 1;
    ck_assert_int_eq(sample(e, 3, &o, he, 3, &rng).token, 1);
}
END_TEST

// Logprobs are the raw logits' log softmax, before penalties and temperature: for {2, 1, 0}
// greedy picks 0 with log(e^2 / (e^2 + e + 1)); a penalty moving the choice to 1 reports 1's.
START_TEST(test_logprobs) {
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 0;
    o.logprobs = true;
    o.top_logprobs = 3;
    tt_rng rng = tt_rng_new(1);
    double l[3] = {2, 1, 0}, lse = log(exp(2) + exp(1) + 1);
    tt__sample_result r = sample(l, 3, &o, NULL, 0, &rng);
    ck_assert_int_eq(r.token, 0);
    ck_assert_close(r.logprob, 2 - lse, 1e-12, 0);
    ck_assert_int_eq(r.n_top, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(r.top[i].token, i);
        ck_assert_close(r.top[i].logprob, 2 - i - lse, 1e-12, 0);
    }
    o.presence_penalty = 1.5;
    o.temperature = 0;
    int32_t h[] = {0};
    r = sample(l, 3, &o, h, 1, &rng);
    ck_assert_int_eq(r.token, 1);
    ck_assert_close(r.logprob, 1 - lse, 1e-12, 0);
    ck_assert_int_eq(r.top[0].token, 0);  // the model's own ranking
}
END_TEST

// A session reports each token's logprob: greedy's token is the most likely, so its
// probability is at least 1 / V.
START_TEST(test_session_logprobs) {
    tt_gpt m;
    small_model(&m, false, 16, 3);
    events ev = {0};
    tt_gpt_session *s = tt_gpt_session_new(&m, &(tt_gpt_session_config){.on_token = record,
                                                                         .ctx = &ev});
    tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = 5};
    r.sample.temperature = 0;
    r.sample.logprobs = true;
    int32_t p[] = {1, 2};
    tt_gpt_session_add(s, p, 2, &r);
    tt_gpt_session_run(s);
    ck_assert_int_eq(ev.n, 5);
    for (int i = 0; i < 5; i++) {
        ck_assert(ev.logprob[i] < 0);
        ck_assert(ev.logprob[i] >= log(1.0 / 27));
    }
    tt_gpt_session_free(s);
    tt_gpt_free(&m);
}
END_TEST

// ---- aborts ----

static tt_gpt abort_model;

static void abort_setup(void) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_kv_head = 2;
    c.n_embd = 8;
    tt_rng rng = tt_rng_new(1);
    if (tt_gpt_init(&abort_model, &c, &rng) != TT_OK) abort();
}

static void abort_teardown(void) { tt_gpt_free(&abort_model); }

// Adds prompt {1} with r to a new session on the abort model (aborts before returning).
static void add_request(const tt_gpt_request *r) {
    tt_gpt_session *s = tt_gpt_session_new(&abort_model, NULL);
    tt_gpt_session_add(s, (const int32_t[]){1}, 1, r);
}

static tt_gpt_request good_request(void) {
    return (tt_gpt_request){.sample = tt_sample_opts_default(), .max_new_tokens = 4};
}

START_TEST(test_abort_min_p) {
    tt_expect_abort("tt_gpt_session_add: min_p must be in [0, 1] (0 turns it off), got 1.5");
    tt_gpt_request r = good_request();
    r.sample.min_p = 1.5;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_repetition_penalty) {
    tt_expect_abort("tt_gpt_session_add: repetition_penalty must be > 0 (1 or 0 turns it off");
    tt_gpt_request r = good_request();
    r.sample.repetition_penalty = -1;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_presence_penalty) {
    tt_expect_abort("tt_gpt_session_add: presence_penalty must be finite");
    tt_gpt_request r = good_request();
    r.sample.presence_penalty = INFINITY;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_penalty_last_n) {
    tt_expect_abort("tt_gpt_session_add: penalty_last_n must be >= 0");
    tt_gpt_request r = good_request();
    r.sample.penalty_last_n = -2;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_top_logprobs) {
    tt_expect_abort("tt_gpt_session_add: top_logprobs must be in [0, 20], got 21");
    tt_gpt_request r = good_request();
    r.sample.top_logprobs = 21;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_max_new) {
    tt_expect_abort("tt_gpt_session_add: max_new_tokens must be >= 1, got 0");
    tt_gpt_request r = good_request();
    r.max_new_tokens = 0;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_stop_token) {
    tt_expect_abort("tt_gpt_session_add: stop_tokens[0] = 11 is outside the vocab [0, 11)");
    tt_gpt_request r = good_request();
    r.stop_tokens = (const int32_t[]){11};
    r.n_stop_tokens = 1;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_stop_string_no_tokenizer) {
    tt_expect_abort("tt_gpt_session_add: stop_strings need the session's tokenizer");
    tt_gpt_request r = good_request();
    r.stop_strings = (const char *[]){"\n"};
    r.n_stop_strings = 1;
    add_request(&r);
}
END_TEST

START_TEST(test_abort_generate_min_p) {
    tt_expect_abort("tt_gpt_generate: min_p must be in [0, 1] (0 turns it off), got -0.1");
    tt_sample_opts o = tt_sample_opts_default();
    o.min_p = -0.1;
    int32_t out[2];
    tt_rng rng = tt_rng_new(1);
    tt_gpt_generate(&abort_model, (const int32_t[]){1}, 1, 2, &o, &rng, out, NULL, NULL);
}
END_TEST

START_TEST(test_abort_bad_seq) {
    tt_expect_abort("tt_gpt_session_tokens: sequence 1 is not in the session (1 added)");
    tt_gpt_session *s = tt_gpt_session_new(&abort_model, NULL);
    tt_gpt_request r = good_request();
    tt_gpt_session_add(s, (const int32_t[]){1}, 1, &r);
    tt_gpt_session_tokens(s, 1, NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("generate");
    TCase *b = tt_tcase("batch");
    tcase_set_timeout(b, 120);
    tcase_add_test(b, test_batch_equals_alone_gpt2);
    tcase_add_test(b, test_batch_equals_alone_modern);
    tcase_add_test(b, test_bf16_cache_close);
    suite_add_tcase(s, b);

    TCase *f = tt_tcase("finish");
    tcase_add_test(f, test_callback_order_and_finish);
    tcase_add_test(f, test_stop_token);
    tcase_add_test(f, test_window_rule_in_session);
    tcase_add_test(f, test_stop_strings);
    suite_add_tcase(s, f);

    TCase *sm = tt_tcase("samplers");
    tcase_add_test(sm, test_min_p);
    tcase_add_test(sm, test_penalties);
    tcase_add_test(sm, test_logprobs);
    tcase_add_test(sm, test_session_logprobs);
    suite_add_tcase(s, sm);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_checked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_min_p, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_repetition_penalty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_presence_penalty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_penalty_last_n, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_top_logprobs, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_max_new, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_stop_token, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_stop_string_no_tokenizer, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_generate_min_p, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bad_seq, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
