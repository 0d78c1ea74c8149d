// GPT sampling: one token from a vector of logits with penalties, temperature, top-k, nucleus
// and min-p, and its log-probability. The generation loop is in session.c and generate.c.
//
// Letters: V vocab (the first n_vocab logits when set).
#include "gpt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tt_sample_opts tt_sample_opts_default(void) {
    return (tt_sample_opts){.temperature = 0.8, .top_k = 200, .top_p = 1.0, .use_cache = true,
                            .repetition_penalty = 1.0};
}

void tt__sample_opts_check(const tt_sample_opts *o, const char *func) {
    TT_CHECK_IN(func, isfinite(o->temperature) && o->temperature >= 0, "temperature must be >= 0 "
                "(0 is greedy), got %g; pick a finite value (0.8 is the default)",
                o->temperature);
    TT_CHECK_IN(func, o->top_k >= 0, "top_k must be >= 0 (0 turns it off), got %d", o->top_k);
    TT_CHECK_IN(func, o->top_p > 0 && o->top_p <= 1, "top_p must be in (0, 1] (1 turns it off), "
                "got %g", o->top_p);
    TT_CHECK_IN(func, o->n_vocab >= 0, "n_vocab must be >= 0 (0 samples every id), got %lld",
                (long long)o->n_vocab);
    TT_CHECK_IN(func, o->min_p >= 0 && o->min_p <= 1, "min_p must be in [0, 1] (0 turns it off), "
                "got %g", o->min_p);
    TT_CHECK_IN(func, isfinite(o->repetition_penalty) && o->repetition_penalty >= 0,
                "repetition_penalty must be > 0 (1 or 0 turns it off; > 1 discourages "
                "repeats), got %g", o->repetition_penalty);
    TT_CHECK_IN(func, isfinite(o->presence_penalty), "presence_penalty must be finite (0 turns "
                "it off; OpenAI uses [-2, 2]), got %g", o->presence_penalty);
    TT_CHECK_IN(func, isfinite(o->frequency_penalty), "frequency_penalty must be finite (0 "
                "turns it off; OpenAI uses [-2, 2]), got %g", o->frequency_penalty);
    TT_CHECK_IN(func, o->penalty_last_n >= 0, "penalty_last_n must be >= 0 (0 means every "
                "token of the prompt and the output), got %lld", (long long)o->penalty_last_n);
    TT_CHECK_IN(func, o->top_logprobs >= 0 && o->top_logprobs <= TT_GPT_TOP_LOGPROBS,
                "top_logprobs must be in [0, %d], got %d", TT_GPT_TOP_LOGPROBS, o->top_logprobs);
}

typedef struct ranked {
    double p;
    int64_t i;
} ranked;

// Descending by value; ties by increasing index, so the order is total and reproducible.
static int by_value_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

// ---- penalties ----

// The penalties on p (V) of the tokens among hist[0 .. n) (the last penalty_last_n of them
// when set; ids outside [0, V) are skipped), once per distinct token: Hugging Face's
// repetition penalty (a logit > 0 divided by it, one < 0 multiplied), then OpenAI's
// logit -= count * frequency_penalty + presence_penalty.
static void apply_penalties(double *p, int64_t V, const tt_sample_opts *o, const int32_t *hist,
                            int64_t n) {
    double rep = o->repetition_penalty;
    bool on = (rep != 0 && rep != 1) || o->presence_penalty != 0 || o->frequency_penalty != 0;
    if (!on || n == 0) return;
    if (o->penalty_last_n > 0 && n > o->penalty_last_n) {
        hist += n - o->penalty_last_n;
        n = o->penalty_last_n;
    }
    int32_t *count = TT_CALLOC((size_t)V, sizeof *count);  // (V)
    for (int64_t j = 0; j < n; j++)
        if (hist[j] >= 0 && hist[j] < V) count[hist[j]]++;
    for (int64_t j = 0; j < n; j++) {
        int32_t t = hist[j];
        if (t < 0 || t >= V || count[t] == 0) continue;
        if (rep != 0 && rep != 1) p[t] = p[t] > 0 ? p[t] / rep : p[t] * rep;
        p[t] -= (double)count[t] * o->frequency_penalty + o->presence_penalty;
        count[t] = 0;  // once per token
    }
    tt_free(count);
}

// ---- log-probabilities ----

// log softmax(raw)[tok] over raw[0 .. V) and, when r->top_logprobs, the most likely ids with
// theirs (ties by smaller id) into r.
static void logprobs(const double *raw, int64_t V, int32_t tok, int n_top, tt__sample_result *r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < V; i++) mx = raw[i] > mx ? raw[i] : mx;
    for (int64_t i = 0; i < V; i++) sum += exp(raw[i] - mx);
    double lse = mx + log(sum);
    r->logprob = raw[tok] - lse;
    r->n_top = 0;
    for (int k = 0; k < n_top && k < V; k++) {  // selection: n_top passes, n_top <= 20
        int64_t best = -1;
        for (int64_t i = 0; i < V; i++) {
            bool taken = false;
            for (int j = 0; j < k && !taken; j++) taken = r->top[j].token == i;
            if (!taken && (best < 0 || raw[i] > raw[best])) best = i;
        }
        r->top[k] = (tt_gpt_logprob){(int32_t)best, raw[best] - lse};
        r->n_top = k + 1;
    }
}

// ---- the samplers ----

// Temperature, top-k, softmax, nucleus and min-p on p (V) whose first maximum is best; then the
// inverse CDF at one uniform draw. Returns the token.
static int64_t sample_tempered(double *p, int64_t V, int64_t best, const tt_sample_opts *o,
                               tt_rng *rng) {
    // Temperature, then top-k on the scaled logits (every token tied with the k-th is kept,
    // as nanoGPT's `logits < v[:, [-1]]`), then softmax in double.
    for (int64_t i = 0; i < V; i++) p[i] /= o->temperature;
    if (!isfinite(p[best])) return best;  // a temperature so small the logits overflow
    ranked *r = TT_MALLOC((size_t)V * sizeof *r);  // (V)
    if (o->top_k > 0 && o->top_k < V) {
        for (int64_t i = 0; i < V; i++) r[i] = (ranked){p[i], i};
        qsort(r, (size_t)V, sizeof *r, by_value_desc);
        double kth = r[o->top_k - 1].p;
        for (int64_t i = 0; i < V; i++)
            if (p[i] < kth) p[i] = -INFINITY;
    }
    double mx = p[best], total = 0;  // the maximum survives top-k
    for (int64_t i = 0; i < V; i++) {
        p[i] = p[i] == -INFINITY ? 0.0 : exp(p[i] - mx);
        total += p[i];
    }
    for (int64_t i = 0; i < V; i++) p[i] /= total;

    // Nucleus (Holtzman et al. 2020): the smallest set of the most likely tokens whose
    // probabilities sum to >= top_p (at least one token); the rest get probability 0.
    total = 1.0;
    if (o->top_p < 1.0) {
        for (int64_t i = 0; i < V; i++) r[i] = (ranked){p[i], i};
        qsort(r, (size_t)V, sizeof *r, by_value_desc);
        double cum = 0;
        int64_t keep = 0;
        while (keep < V && (keep == 0 || cum < o->top_p) && r[keep].p > 0) cum += r[keep++].p;
        for (int64_t j = keep; j < V; j++) p[r[j].i] = 0.0;
        total = cum;
    }
    tt_free(r);
    // Min-p (Nguyen et al. 2024, Hugging Face's MinPLogitsWarper): tokens below
    // min_p * the largest probability get 0; the total is summed again in index order.
    if (o->min_p > 0) {
        double cut = o->min_p * p[best];
        total = 0;
        for (int64_t i = 0; i < V; i++) {
            if (p[i] < cut) p[i] = 0.0;
            total += p[i];
        }
    }

    // Inverse CDF in index order with one uniform draw.
    double u = tt_rng_uniform(rng) * total, cum = 0;
    int64_t tok = -1;
    for (int64_t i = 0; i < V; i++) {
        if (p[i] <= 0) continue;
        tok = i;
        cum += p[i];
        if (u < cum) break;
    }
    return tok;
}

tt__sample_result tt__sample_f64(double *p, int64_t V, const tt_sample_opts *o,
                                 const int32_t *hist, int64_t n_hist, bool want_logprobs,
                                 tt_rng *rng) {
    tt__sample_result res = {0};
    V = o->n_vocab > 0 && o->n_vocab < V ? o->n_vocab : V;
    for (int64_t i = 0; i < V; i++) TT_CHECK(!isnan(p[i]), "logit %lld is NaN", (long long)i);
    double *raw = NULL;
    if (want_logprobs) {
        raw = TT_MALLOC((size_t)V * sizeof *raw);  // (V)
        memcpy(raw, p, (size_t)V * sizeof *raw);
    }
    apply_penalties(p, V, o, hist, n_hist);
    int64_t best = -1;
    for (int64_t i = 0; i < V; i++)
        if (p[i] > -INFINITY && (best < 0 || p[i] > p[best])) best = i;
    TT_CHECK(best >= 0, "every logit is -inf: no token can be sampled");
    res.token = (int32_t)(o->temperature == 0 ? best : sample_tempered(p, V, best, o, rng));
    if (raw) logprobs(raw, V, res.token, o->top_logprobs, &res);
    tt_free(raw);
    return res;
}

int32_t tt_sample_logits(const tt_tensor *logits, const tt_sample_opts *opts, tt_rng *rng) {
    TT_CHECK(logits && logits->ndim == 1 && tt_dtype_is_float(logits->dtype) &&
             logits->shape[0] >= 1, "logits must be a non-empty float vector (V,), got %s %s",
             logits ? tt__shape(logits) : "NULL", logits ? tt_dtype_name(logits->dtype) : "");
    TT_CHECK(logits->shape[0] <= INT32_MAX, "vocab of %lld does not fit an int32 token",
             (long long)logits->shape[0]);
    tt_sample_opts o = opts ? *opts : tt_sample_opts_default();
    tt__sample_opts_check(&o, __func__);
    double *p = TT_MALLOC((size_t)logits->shape[0] * sizeof *p);  // (V)
    tt_to_f64_array(logits, p);
    int32_t tok = tt__sample_f64(p, logits->shape[0], &o, NULL, 0, false, rng).token;
    tt_free(p);
    return tok;
}
