// GPT generation sessions: several sequences decoded together, each with its own KV cache (f32
// or bf16), context window, sampling settings, stop tokens and strings, and a streaming
// callback. The samplers are in sampling.c; tt_gpt_generate (one sequence) in generate.c.
//
// Letters: R rows (active sequences in a step), T prompt tokens, C channels, V vocab,
// L block_size, NKV key/value heads, HS head size.
#include "gpt_internal.h"
#include "../../data/tokenizer.h"
#include "../../tensor/kernels/bf16.h"

#include <math.h>
#include <string.h>

typedef struct seq {
    tt_gpt_request req;      // stop lists pointing to the copies below
    int32_t *stop_tokens;    // (n_stop_tokens) owned
    char **stop_strings;     // (n_stop_strings) owned
    size_t max_stop;         // the longest stop string's length
    tt_rng own_rng, *rng;    // rng is &own_rng, or tt_gpt_generate's
    int32_t *win;            // (L) the context window
    int64_t len;             // tokens in it
    int32_t *hist;           // the prompt, then the output
    int64_t n_prompt, n_hist, cap_hist;
    tt_tensor **k, **v;      // n_layer (1, NKV, L, HS) each, the model's dtype; or NULL
    tt_bf16 **kb, **vb;      // n_layer NKV * L * HS each when kv_bf16; or NULL
    int64_t pos;             // cache positions filled
    double *logits;          // (V) the next token's
    char *text;              // the output's bytes, 0-terminated
    size_t text_len, text_cap, emitted;
    tt_gpt_finish finish;
} seq;

struct tt_gpt_session {
    tt_gpt *m;
    tt_gpt_session_config cfg;
    seq **seqs;
    int n, cap, active;
    int64_t L, V, NKV, HS, n_layer;
    tt_tensor **sk, **sv;  // bf16 caches: a (1, NKV, L, HS) f32 buffer per row, n_scratch
    int n_scratch;
    bool grad, training;
};

// ---- the caches ----

static size_t layer_elems(const tt_gpt_session *s) { return (size_t)(s->NKV * s->L * s->HS); }

static void cache_alloc(tt_gpt_session *s, seq *q) {
    size_t nl = (size_t)s->n_layer;
    if (s->cfg.kv_bf16) {
        q->kb = TT_CALLOC(nl, sizeof *q->kb);
        q->vb = TT_CALLOC(nl, sizeof *q->vb);
        for (size_t l = 0; l < nl; l++) {
            q->kb[l] = TT_CALLOC(layer_elems(s), sizeof **q->kb);
            q->vb[l] = TT_CALLOC(layer_elems(s), sizeof **q->vb);
        }
        return;
    }
    tt_dtype dt = s->m->wte.weight->dtype;
    q->k = TT_CALLOC(nl, sizeof *q->k);
    q->v = TT_CALLOC(nl, sizeof *q->v);
    for (size_t l = 0; l < nl; l++) {
        q->k[l] = tt__new_zeros(dt, 4, (int64_t[]){1, s->NKV, s->L, s->HS});  // (1,NKV,L,HS)
        q->v[l] = tt__new_zeros(dt, 4, (int64_t[]){1, s->NKV, s->L, s->HS});  // (1,NKV,L,HS)
    }
}

// Frees q's cache (a finished sequence costs no memory).
static void cache_free(tt_gpt_session *s, seq *q) {
    for (int64_t l = 0; l < s->n_layer; l++) {
        if (q->k) tt_release(q->k[l]);
        if (q->v) tt_release(q->v[l]);
        if (q->kb) tt_free(q->kb[l]);
        if (q->vb) tt_free(q->vb[l]);
    }
    tt_free(q->k);
    tt_free(q->v);
    tt_free(q->kb);
    tt_free(q->vb);
    q->k = q->v = NULL;
    q->kb = q->vb = NULL;
}

// Positions [from, to) of (NKV, L, HS) between bf16 b and f32 f, widening or rounding.
static void copy_positions(const tt_gpt_session *s, tt_bf16 *b, float *f, int64_t from,
                           int64_t to, bool widen) {
    for (int64_t h = 0; h < s->NKV; h++) {
        size_t at = (size_t)((h * s->L + from) * s->HS), n = (size_t)((to - from) * s->HS);
        for (size_t i = at; i < at + n; i++) {
            if (widen) f[i] = tt_bf16_to_f32(b[i]);
            else b[i] = tt_bf16_from_f32(f[i]);
        }
    }
}

// The key and value tensors (1, NKV, L, HS) q uses at layer l as row r of a step: its own, or
// (bf16) row r's f32 buffers holding its q->pos stored positions widened.
static void layer_kv(tt_gpt_session *s, seq *q, int64_t l, int r, tt_tensor **k, tt_tensor **v) {
    if (!s->cfg.kv_bf16) {
        *k = q->k[l];
        *v = q->v[l];
        return;
    }
    *k = s->sk[r];
    *v = s->sv[r];
    copy_positions(s, q->kb[l], tt_data(*k), 0, q->pos, true);
    copy_positions(s, q->vb[l], tt_data(*v), 0, q->pos, true);
}

// After layer l: (bf16) positions [from, to) written by the layer into row r's buffers are
// rounded into q's cache.
static void store_kv(tt_gpt_session *s, seq *q, int64_t l, int r, int64_t from, int64_t to) {
    if (!s->cfg.kv_bf16) return;
    copy_positions(s, q->kb[l], tt_data(s->sk[r]), from, to, false);
    copy_positions(s, q->vb[l], tt_data(s->sv[r]), from, to, false);
}

// Enough bf16 widening buffers for n rows.
static void scratch_reserve(tt_gpt_session *s, int n) {
    if (!s->cfg.kv_bf16 || n <= s->n_scratch) return;
    s->sk = TT_REALLOC(s->sk, (size_t)n * sizeof *s->sk);
    s->sv = TT_REALLOC(s->sv, (size_t)n * sizeof *s->sv);
    for (int r = s->n_scratch; r < n; r++) {
        s->sk[r] = tt__new_zeros(TT_F32, 4, (int64_t[]){1, s->NKV, s->L, s->HS});
        s->sv[r] = tt__new_zeros(TT_F32, 4, (int64_t[]){1, s->NKV, s->L, s->HS});
    }
    s->n_scratch = n;
}

// ---- forwards ----

// The window of q from position 0: one forward over it, filling the cache (or, without the
// cache, a full forward) -> q->logits.
static void prefill(tt_gpt_session *s, seq *q) {
    tt_gpt *m = s->m;
    tt_scope_begin();
    tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(1, q->len), q->win);  // (1, T)
    tt_tensor *logits;
    if (!q->req.sample.use_cache) {
        tt_tensor *all = tt_gpt_forward(m, idx);  // (1, T, V)
        logits = tt_slice(all, 1, q->len - 1, q->len, 1);
    } else {
        scratch_reserve(s, 1);
        q->pos = 0;
        tt_tensor *x = tt__gpt_embed(m, idx, 0);  // (1, T, C)
        for (int64_t l = 0; l < s->n_layer; l++) {
            tt_tensor *k, *v;
            layer_kv(s, q, l, 0, &k, &v);
            x = tt_nn_block_forward_cached(&m->blocks[l], x, k, v, 0);
            store_kv(s, q, l, 0, 0, q->len);
        }
        x = tt_nn_norm_forward(&m->ln_f, tt_slice(x, 1, q->len - 1, q->len, 1));  // (1, 1, C)
        logits = tt__gpt_head(m, x);  // (1, 1, V)
        q->pos = q->len;
    }
    tt_to_f64_array(logits, q->logits);
    tt_scope_end();
}

// tokens (R) at positions pos (R) -> x (R, 1, C): embeddings (one row alone is
// tt__gpt_embed's, the same ops as a single sequence's step) and dropout.
static tt_tensor *embed_rows(tt_gpt *m, const int32_t *tok, const int64_t *pos, int n) {
    tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(n, 1), tok);  // (R, 1)
    if (n == 1) return tt__gpt_embed(m, idx, pos[0]);
    tt_tensor *x = tt_nn_embedding_forward(&m->wte, idx);  // (R, 1, C)
    if (m->wpe.weight) {
        tt_tensor **xs = TT_MALLOC((size_t)n * sizeof *xs);
        for (int i = 0; i < n; i++)
            xs[i] = tt_nn_pos_embedding_forward(&m->wpe, tt_slice(x, 0, i, i + 1, 1), pos[i]);
        x = tt_cat(n, xs, 0);
        tt_free(xs);
    }
    return tt_nn_dropout_forward(&m->drop, x);
}

// One step of the rows' sequences (their newest token at position pos): the Linears and the
// head run once on the (R, C) rows, attention per row -> each row's logits.
static void decode_rows(tt_gpt_session *s, seq **rows, int n) {
    tt_gpt *m = s->m;
    int32_t *tok = TT_MALLOC((size_t)n * sizeof *tok);
    int64_t *pos = TT_MALLOC((size_t)n * sizeof *pos);
    tt_tensor **kc = TT_MALLOC((size_t)n * sizeof *kc), **vc = TT_MALLOC((size_t)n * sizeof *vc);
    for (int i = 0; i < n; i++) {
        tok[i] = rows[i]->win[rows[i]->len - 1];
        pos[i] = rows[i]->pos;
    }
    scratch_reserve(s, n);
    tt_scope_begin();
    tt_tensor *x = embed_rows(m, tok, pos, n);  // (R, 1, C)
    for (int64_t l = 0; l < s->n_layer; l++) {
        for (int i = 0; i < n; i++) layer_kv(s, rows[i], l, i, &kc[i], &vc[i]);
        x = tt_nn_block_forward_rows(&m->blocks[l], x, kc, vc, pos);
        for (int i = 0; i < n; i++) store_kv(s, rows[i], l, i, pos[i], pos[i] + 1);
    }
    x = tt_nn_norm_forward(&m->ln_f, x);
    tt_tensor *logits = tt__gpt_head(m, x);  // (R, 1, V)
    for (int i = 0; i < n; i++) {
        tt_to_f64_array(tt_slice(logits, 0, i, i + 1, 1), rows[i]->logits);
        rows[i]->pos++;
    }
    tt_scope_end();
    tt_free(tok);
    tt_free(pos);
    tt_free(kc);
    tt_free(vc);
}

// ---- text and stop conditions ----

static void text_append(seq *q, const unsigned char *b, size_t n) {
    if (q->text_len + n + 1 > q->text_cap) {
        q->text_cap = 2 * (q->text_len + n + 1);
        q->text = TT_REALLOC(q->text, q->text_cap);
    }
    memcpy(q->text + q->text_len, b, n);
    q->text_len += n;
    q->text[q->text_len] = 0;
}

// The earliest stop string in q's text that ends after byte `from` (bytes before it were
// checked already): cuts the text before it and returns true.
static bool cut_at_stop(seq *q, size_t from) {
    size_t at = SIZE_MAX;
    for (int j = 0; j < q->req.n_stop_strings; j++) {
        const char *st = q->stop_strings[j];
        size_t sl = strlen(st);
        size_t i = from >= sl - 1 ? from - (sl - 1) : 0;
        for (; i + sl <= q->text_len && i < at; i++)
            if (memcmp(q->text + i, st, sl) == 0) at = i;
    }
    if (at == SIZE_MAX) return false;
    q->text_len = at;
    q->text[at] = 0;
    return true;
}

// How many bytes at the end of q's text could still begin a stop string: the longest suffix
// that is a proper prefix of one of them.
static size_t held_back(const seq *q) {
    size_t most = q->max_stop > 0 ? q->max_stop - 1 : 0;
    if (most > q->text_len - q->emitted) most = q->text_len - q->emitted;
    for (size_t k = most; k > 0; k--) {
        const char *tail = q->text + q->text_len - k;
        for (int j = 0; j < q->req.n_stop_strings; j++)
            if (strlen(q->stop_strings[j]) > k && memcmp(q->stop_strings[j], tail, k) == 0)
                return k;
    }
    return 0;
}

static bool is_stop_token(const seq *q, int32_t tok) {
    for (int j = 0; j < q->req.n_stop_tokens; j++)
        if (q->stop_tokens[j] == tok) return true;
    return false;
}

// Samples q's next token from its logits, records it, applies the stop conditions and calls
// the callback with the text it releases.
static void sample_emit(tt_gpt_session *s, int idx, seq *q) {
    const tt_sample_opts *o = &q->req.sample;
    tt__sample_result r = tt__sample_f64(q->logits, s->V, o, q->hist, q->n_hist, o->logprobs,
                                         q->rng);
    if (q->n_hist == q->cap_hist) {
        q->cap_hist *= 2;
        q->hist = TT_REALLOC(q->hist, (size_t)q->cap_hist * sizeof *q->hist);
    }
    q->hist[q->n_hist++] = r.token;
    const tt_tokenizer *tk = s->cfg.tokenizer;
    if (is_stop_token(q, r.token)) {
        q->finish = TT_GPT_FINISH_STOP_TOKEN;
    } else if (tk) {
        size_t from = q->text_len, n = 0;
        const unsigned char *b = r.token < tk->n_vocab ? tt_tokenizer_token(tk, r.token, &n)
                                                       : NULL;
        if (b) text_append(q, b, n);
        if (cut_at_stop(q, from)) q->finish = TT_GPT_FINISH_STOP_STRING;
    }
    if (!q->finish && q->n_hist - q->n_prompt == q->req.max_new_tokens)
        q->finish = TT_GPT_FINISH_LENGTH;
    size_t end = q->finish ? q->text_len : q->text_len - held_back(q);
    tt_gpt_token_event e = {.seq = idx, .token = r.token, .logprob = o->logprobs ? r.logprob
                            : NAN, .top = r.top, .n_top = r.n_top, .finish = q->finish};
    if (tk) {
        e.text = q->text + q->emitted;
        e.text_len = end - q->emitted;
    }
    q->emitted = end;
    if (s->cfg.on_token) s->cfg.on_token(&e, s->cfg.ctx);
}

// ---- the session ----

tt_gpt_session *tt_gpt_session_new(tt_gpt *m, const tt_gpt_session_config *cfg) {
    TT_CHECK(m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    tt_gpt_session *s = TT_CALLOC(1, sizeof *s);
    s->m = m;
    if (cfg) s->cfg = *cfg;
    TT_CHECK(!s->cfg.kv_bf16 || m->wte.weight->dtype == TT_F32, "kv_bf16 needs an f32 model; "
             "this one is %s", tt_dtype_name(m->wte.weight->dtype));
    s->L = m->cfg.block_size;
    s->V = m->cfg.vocab_size;
    s->NKV = m->cfg.n_kv_head;
    s->HS = m->cfg.n_embd / m->cfg.n_head;
    s->n_layer = m->cfg.n_layer;
    s->grad = tt_set_grad_enabled(false);
    s->training = m->drop.training;
    tt_gpt_train(m, false);
    return s;
}

// Aborts unless r is valid for s's model; messages name the field.
static void check_request(const tt_gpt_session *s, const tt_gpt_request *r, const char *func) {
    TT_CHECK_IN(func, r, "the request is NULL; pass a tt_gpt_request");
    tt__sample_opts_check(&r->sample, func);
    TT_CHECK_IN(func, r->max_new_tokens >= 1, "max_new_tokens must be >= 1, got %lld",
                (long long)r->max_new_tokens);
    TT_CHECK_IN(func, r->n_stop_tokens >= 0 && (r->n_stop_tokens == 0 || r->stop_tokens),
                "n_stop_tokens=%d needs stop_tokens", r->n_stop_tokens);
    for (int j = 0; j < r->n_stop_tokens; j++)
        TT_CHECK_IN(func, r->stop_tokens[j] >= 0 && r->stop_tokens[j] < s->V, "stop_tokens[%d] "
                    "= %d is outside the vocab [0, %lld)", j, (int)r->stop_tokens[j],
                    (long long)s->V);
    TT_CHECK_IN(func, r->n_stop_strings >= 0 && (r->n_stop_strings == 0 || r->stop_strings),
                "n_stop_strings=%d needs stop_strings", r->n_stop_strings);
    TT_CHECK_IN(func, r->n_stop_strings == 0 || s->cfg.tokenizer, "stop_strings need the "
                "session's tokenizer (tt_gpt_session_config.tokenizer) to decode the text");
    for (int j = 0; j < r->n_stop_strings; j++)
        TT_CHECK_IN(func, r->stop_strings[j] && r->stop_strings[j][0], "stop_strings[%d] is "
                    "NULL or empty; a stop string needs at least one byte", j);
}

// q's copies of r's stop lists.
static void copy_stops(seq *q, const tt_gpt_request *r) {
    q->req = *r;
    q->stop_tokens = TT_MALLOC((size_t)r->n_stop_tokens * sizeof *q->stop_tokens + 1);
    if (r->n_stop_tokens > 0)
        memcpy(q->stop_tokens, r->stop_tokens, (size_t)r->n_stop_tokens * sizeof(int32_t));
    q->stop_strings = TT_CALLOC((size_t)r->n_stop_strings + 1, sizeof *q->stop_strings);
    for (int j = 0; j < r->n_stop_strings; j++) {
        size_t n = strlen(r->stop_strings[j]);
        q->stop_strings[j] = TT_MALLOC(n + 1);
        memcpy(q->stop_strings[j], r->stop_strings[j], n + 1);
        q->max_stop = n > q->max_stop ? n : q->max_stop;
    }
    q->req.stop_tokens = q->stop_tokens;
    q->req.stop_strings = (const char *const *)q->stop_strings;
}

int tt__gpt_session_add_rng(tt_gpt_session *s, const int32_t *prompt, int64_t n_prompt,
                            const tt_gpt_request *r, tt_rng *rng) {
    const char *func = rng ? "tt_gpt_generate" : "tt_gpt_session_add";
    check_request(s, r, func);
    TT_CHECK_IN(func, prompt && n_prompt >= 1, "the prompt needs at least one token (got "
                "n_prompt=%lld); start from a newline or any token of the vocab",
                (long long)n_prompt);
    for (int64_t i = 0; i < n_prompt; i++)
        TT_CHECK_IN(func, prompt[i] >= 0 && prompt[i] < s->V, "prompt token %lld is %d, outside "
                    "the vocab [0, %lld)", (long long)i, (int)prompt[i], (long long)s->V);
    seq *q = TT_CALLOC(1, sizeof *q);
    copy_stops(q, r);
    tt_rng_seed(&q->own_rng, r->sample.seed);
    q->rng = rng ? rng : &q->own_rng;
    q->len = n_prompt < s->L ? n_prompt : s->L;
    q->win = TT_MALLOC((size_t)s->L * sizeof *q->win);
    memcpy(q->win, prompt + n_prompt - q->len, (size_t)q->len * sizeof *q->win);
    q->cap_hist = n_prompt + 16;
    q->hist = TT_MALLOC((size_t)q->cap_hist * sizeof *q->hist);
    memcpy(q->hist, prompt, (size_t)n_prompt * sizeof *q->hist);
    q->n_prompt = q->n_hist = n_prompt;
    q->logits = TT_MALLOC((size_t)s->V * sizeof *q->logits);
    q->text = TT_CALLOC(1, 1);
    q->text_cap = 1;
    if (r->sample.use_cache) cache_alloc(s, q);
    prefill(s, q);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->seqs = TT_REALLOC(s->seqs, (size_t)s->cap * sizeof *s->seqs);
    }
    s->seqs[s->n] = q;
    s->active++;
    return s->n++;
}

int tt_gpt_session_add(tt_gpt_session *s, const int32_t *prompt, int64_t n_prompt,
                       const tt_gpt_request *r) {
    TT_CHECK(s, "the session is NULL; call tt_gpt_session_new");
    return tt__gpt_session_add_rng(s, prompt, n_prompt, r, NULL);
}

// q's window after its new token: appended (true: q joins the step's batch), or, when full, its
// newer half with the token, rebuilt by one forward of q alone (false).
static bool advance_window(tt_gpt_session *s, seq *q) {
    int32_t tok = q->hist[q->n_hist - 1];
    if (q->len < s->L) {
        q->win[q->len++] = tok;
        return true;
    }
    int64_t keep = (s->L + 1) / 2;
    memmove(q->win, q->win + q->len - (keep - 1), (size_t)(keep - 1) * sizeof *q->win);
    q->win[keep - 1] = tok;
    q->len = keep;
    return false;
}

int tt_gpt_session_step(tt_gpt_session *s) {
    TT_CHECK(s, "the session is NULL; call tt_gpt_session_new");
    seq **rows = TT_MALLOC((size_t)(s->n + 1) * sizeof *rows);
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        seq *q = s->seqs[i];
        if (q->finish) continue;
        sample_emit(s, i, q);
        if (q->finish) {  // out of the batch, its cache freed
            cache_free(s, q);
            s->active--;
        } else if (advance_window(s, q) && q->req.sample.use_cache) {
            rows[n++] = q;
        } else {
            prefill(s, q);
        }
    }
    if (n > 0) decode_rows(s, rows, n);
    tt_free(rows);
    return s->active;
}

void tt_gpt_session_run(tt_gpt_session *s) {
    while (tt_gpt_session_step(s) > 0) {}
}

int tt_gpt_session_active(const tt_gpt_session *s) { return s->active; }
int tt_gpt_session_count(const tt_gpt_session *s) { return s->n; }

static const seq *get_seq(const tt_gpt_session *s, int i, const char *func) {
    TT_CHECK_IN(func, s && i >= 0 && i < s->n, "sequence %d is not in the session (%d added)", i,
                s ? s->n : 0);
    return s->seqs[i];
}

const int32_t *tt_gpt_session_tokens(const tt_gpt_session *s, int i, int64_t *n) {
    const seq *q = get_seq(s, i, __func__);
    if (n) *n = q->n_hist - q->n_prompt;
    return q->hist + q->n_prompt;
}

const char *tt_gpt_session_text(const tt_gpt_session *s, int i, size_t *len) {
    const seq *q = get_seq(s, i, __func__);
    if (len) *len = q->text_len;
    return q->text;
}

tt_gpt_finish tt_gpt_session_finish(const tt_gpt_session *s, int i) {
    return get_seq(s, i, __func__)->finish;
}

size_t tt_gpt_session_kv_bytes(const tt_gpt_session *s) {
    size_t per = 2 * (size_t)s->n_layer * layer_elems(s), total = 0;
    for (int i = 0; i < s->n; i++) {
        const seq *q = s->seqs[i];
        if (q->k) total += per * tt_dtype_size(q->k[0]->dtype);
        if (q->kb) total += per * sizeof(tt_bf16);
    }
    return total + 2 * (size_t)s->n_scratch * layer_elems(s) * sizeof(float);
}

void tt_gpt_session_free(tt_gpt_session *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        seq *q = s->seqs[i];
        cache_free(s, q);
        for (int j = 0; j < q->req.n_stop_strings; j++) tt_free(q->stop_strings[j]);
        tt_free(q->stop_strings);
        tt_free(q->stop_tokens);
        tt_free(q->win);
        tt_free(q->hist);
        tt_free(q->logits);
        tt_free(q->text);
        tt_free(q);
    }
    for (int r = 0; r < s->n_scratch; r++) {
        tt_release(s->sk[r]);
        tt_release(s->sv[r]);
    }
    tt_free(s->sk);
    tt_free(s->sv);
    tt_free(s->seqs);
    tt_gpt_train(s->m, s->training);
    tt_set_grad_enabled(s->grad);
    tt_free(s);
}
