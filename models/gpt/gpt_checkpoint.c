// The GPT checkpoint (docs/checkpoint.md): its format name, the config by the field table,
// the parameters under their module tree names, the dropout stream, the optimizer state and
// the training state; the loader's checks before it allocates. Not here: the file format
// itself (io/checkpoint.c) and the config table (gpt_config.c).
#include "gpt_internal.h"
#include "../../train/train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// The last error again with status s and prefix before it (the message buffer is reused, so it
// is copied first).
static tt_status rewrap(tt_status s, const char *prefix) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tt_last_error());
    return tt_set_error(s, "%s%s", prefix, msg);
}

// The "format" entry: new files name the format, TT_GPT_FORMAT; the first ones, written by
// examples/char_gpt before the model moved into the library, say "char_gpt" and still load.
#define FORMAT_OLD "char_gpt"

static bool has_format(const tt_checkpoint *ck) {
    const unsigned char *b;
    size_t n;
    if (!tt_ckpt_get_bytes(ck, "format", &b, &n)) return false;
    return (n == strlen(TT_GPT_FORMAT) && memcmp(b, TT_GPT_FORMAT, n) == 0) ||
           (n == strlen(FORMAT_OLD) && memcmp(b, FORMAT_OLD, n) == 0);
}

static void rng_to_bytes(const tt_rng *r, unsigned char out[32]) {
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 8; b++) out[8 * i + b] = (unsigned char)(r->s[i] >> (8 * b));
}

// false unless n == 32 and the state is not xoshiro's invalid all-zero one.
static bool rng_from_bytes(tt_rng *r, const unsigned char *in, size_t n) {
    if (n != 32) return false;
    uint64_t any = 0;
    tt_rng t;
    for (int i = 0; i < 4; i++) {
        t.s[i] = 0;
        for (int b = 0; b < 8; b++) t.s[i] |= (uint64_t)in[8 * i + b] << (8 * b);
        any |= t.s[i];
    }
    if (any) *r = t;
    return any != 0;
}

static void set_rng(tt_checkpoint *ck, const char *key, const tt_rng *r) {
    unsigned char b[32];
    rng_to_bytes(r, b);
    tt_ckpt_set_bytes(ck, key, b, 32);
}

void tt_gpt_ckpt_fill(tt_checkpoint *ck, const tt_gpt *m, const tt_optim *o,
                      const tt_gpt_state *st) {
    TT_CHECK(ck && m && m->blocks, "checkpoint and an initialized model must not be NULL");
    char key[64];
    tt_ckpt_set_bytes(ck, "format", TT_GPT_FORMAT, strlen(TT_GPT_FORMAT));
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        snprintf(key, sizeof key, "cfg.%s", f->name);
        double v = tt_gpt_field_get(&m->cfg, f);
        if (f->type == TT_GPT_FIELD_F64) tt_ckpt_set_f64(ck, key, v);
        else tt_ckpt_set_i64(ck, key, (int64_t)v);
    }
    if (st) {
        tt_ckpt_set_i64(ck, "step", st->step);
        set_rng(ck, "rng.data", &st->data_rng);
        tt_ckpt_set_f64(ck, "best_val_loss", st->best_val_loss);
        tt_ckpt_set_f64(ck, "train_loss", st->train_loss);
        tt_ckpt_set_f64(ck, "val_loss", st->val_loss);
    }
    set_rng(ck, "rng.model", &m->dropout_rng);
    tt_ckpt_add_params(ck, "model.", &m->params);
    if (o) tt_ckpt_add_optim(ck, o);
}

tt_status tt_gpt_ckpt_config(const tt_checkpoint *ck, tt_gpt_config *cfg) {
    TT_CHECK(ck && cfg, "checkpoint and cfg must not be NULL");
    if (!has_format(ck))
        return tt_set_error(TT_ERR_FORMAT, "not a GPT checkpoint (no format '" TT_GPT_FORMAT
                            "' or '" FORMAT_OLD "')");
    tt_gpt_config c = tt_gpt_config_default();
    char key[64];
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        snprintf(key, sizeof key, "cfg.%s", f->name);
        int64_t iv;
        double v = f->def;  // a field newer than the file: its default
        if (f->type == TT_GPT_FIELD_F64) {
            if (!tt_ckpt_get_f64(ck, key, &v) && tt_ckpt_get_i64(ck, key, &iv))
                return tt_set_error(TT_ERR_FORMAT, "%s is an integer, not a number", key);
        } else if (tt_ckpt_get_i64(ck, key, &iv)) {
            v = (double)iv;
            // Beyond 2^53: out of every range anyway. v >= 2^63 first: converting it to
            // int64 is undefined (x86 gives INT64_MIN, aarch64 saturates to INT64_MAX).
            if (v >= 0x1p63 || (int64_t)v != iv)
                return tt_set_error(TT_ERR_FORMAT, "%s = %lld is out of range", key,
                                    (long long)iv);
        } else if (tt_ckpt_get_f64(ck, key, &v)) {
            return tt_set_error(TT_ERR_FORMAT, "%s is a number, not an integer", key);
        }
        if (tt__gpt_field_check(f, key, v) != TT_OK)
            return rewrap(TT_ERR_FORMAT, "invalid config: ");
        tt_gpt_field_set(&c, f, v);
    }
    if (tt_gpt_config_validate(&c) != TT_OK) return rewrap(TT_ERR_FORMAT, "invalid config: ");
    *cfg = c;
    return TT_OK;
}

tt_status tt__gpt_check_masks(const tt_gpt_config *c) {
    // The causal masks are not parameters: n_layer (block_size, block_size) i32 tables.
    double masks = (double)c->n_layer * (double)c->block_size * (double)c->block_size;
    int64_t need = tt_gpt_config_num_params(c, false);
    if (masks > 67108864.0 && masks > 64.0 * (double)need)
        return tt_set_error(TT_ERR_MISMATCH, "its config asks for n_layer * block_size^2 = "
                            "%.0f mask entries (%.1f GiB), more than 64x its %lld parameters; "
                            "the config is corrupt", masks, 4.0 * masks / 1073741824.0,
                            (long long)need);
    return TT_OK;
}

tt_status tt_gpt_check_finite(const tt_gpt *m) {
    TT_CHECK(m && m->params.n, "an initialized model must be given");
    int64_t bad;
    const char *name = tt_params_nonfinite(&m->params, &bad);
    if (!name) return TT_OK;
    const tt_tensor *t = tt_params_get(&m->params, name);
    return tt_set_error(TT_ERR_FORMAT, "tensor '%s' holds %s at element %lld of %lld; the "
                        "weights are corrupt or were saved by a diverged run: use an earlier "
                        "checkpoint or train again", name,
                        isnan(tt_at(t, bad)) ? "NaN" : "an infinity", (long long)bad,
                        (long long)tt_numel(t));
}

// Elements of the checkpoint's tensors whose names start with prefix.
static int64_t numel_under(const tt_checkpoint *ck, const char *prefix) {
    size_t k = strlen(prefix);
    int64_t n = 0;
    for (int i = 0; i < ck->tensors.n; i++)
        if (strncmp(ck->tensors.items[i].name, prefix, k) == 0)
            n += tt_numel(ck->tensors.items[i].tensor);
    return n;
}

tt_status tt_gpt_ckpt_model(tt_gpt *m, const tt_checkpoint *ck) {
    TT_CHECK(m && ck, "model and checkpoint must not be NULL");
    memset(m, 0, sizeof *m);
    tt_gpt_config c;
    tt_status s = tt_gpt_ckpt_config(ck, &c);
    if (s != TT_OK) return s;
    int64_t need = tt_gpt_config_num_params(&c, false), have = numel_under(ck, "model.");
    if (need > have)
        return tt_set_error(TT_ERR_MISMATCH, "its config needs %lld parameters but the file "
                            "holds %lld under model.; the config or the tensors are corrupt",
                            (long long)need, (long long)have);
    if ((s = tt__gpt_check_masks(&c)) != TT_OK) return s;
    s = tt__gpt_init_for_load(m, &c);
    if (s != TT_OK) return s;
    const unsigned char *b;
    size_t n;
    if (tt_ckpt_get_bytes(ck, "rng.model", &b, &n) && !rng_from_bytes(&m->dropout_rng, b, n)) {
        tt_gpt_free(m);
        return tt_set_error(TT_ERR_FORMAT, "rng.model is not a valid generator state");
    }
    if (tt_ckpt_restore_params(ck, "model.", &m->params) != TT_OK) {
        tt_gpt_free(m);
        return rewrap(TT_ERR_MISMATCH, "it does not fit its config: ");
    }
    if ((s = tt_gpt_check_finite(m)) != TT_OK) tt_gpt_free(m);
    return s;
}

tt_status tt_gpt_ckpt_optim(tt_optim *o, const tt_checkpoint *ck) {
    TT_CHECK(o && ck, "optimizer and checkpoint must not be NULL");
    tt_status st = tt_ckpt_restore_optim_state(ck, o);
    if (st == TT_ERR_FORMAT) return st;
    if (st != TT_OK) return rewrap(TT_ERR_MISMATCH, "its optimizer state does not fit: ");
    return TT_OK;
}

tt_status tt_gpt_ckpt_state(const tt_checkpoint *ck, tt_gpt_state *st) {
    TT_CHECK(ck && st, "checkpoint and state must not be NULL");
    tt_gpt_state s;
    memset(&s, 0, sizeof s);
    const unsigned char *b;
    size_t n;
    if (!tt_ckpt_get_i64(ck, "step", &s.step) || s.step < 0)
        return tt_set_error(TT_ERR_FORMAT, "no valid integer 'step'");
    if (!tt_ckpt_get_bytes(ck, "rng.data", &b, &n) || !rng_from_bytes(&s.data_rng, b, n))
        return tt_set_error(TT_ERR_FORMAT, "no valid rng.data generator state");
    const char *keys[] = {"best_val_loss", "train_loss", "val_loss"};
    double *dst[] = {&s.best_val_loss, &s.train_loss, &s.val_loss};
    for (int i = 0; i < 3; i++)
        if (!tt_ckpt_get_f64(ck, keys[i], dst[i]))
            return tt_set_error(TT_ERR_FORMAT, "no number '%s'", keys[i]);
    // A NaN (or -inf) best is no best: no loss compares below it, so none would be kept again.
    if (!(s.best_val_loss > -INFINITY)) s.best_val_loss = INFINITY;
    *st = s;
    return TT_OK;
}

tt_status tt_gpt_save(const char *path, const tt_gpt *m, const tt_optim *o,
                      const tt_gpt_state *st) {
    TT_CHECK(path, "path must not be NULL");
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_gpt_ckpt_fill(&ck, m, o, st);
    tt_status s = tt_ckpt_save(&ck, path);
    tt_ckpt_free(&ck);
    return s;
}

tt_status tt_gpt_load(const char *path, tt_gpt *m, tt_checkpoint *ck) {
    TT_CHECK(path && m, "path and model must not be NULL");
    memset(m, 0, sizeof *m);
    tt_checkpoint own;
    tt_checkpoint *c = ck ? ck : &own;
    tt_status s = tt_ckpt_load(c, path);  // its messages name the path
    if (s != TT_OK) return s;
    s = tt_gpt_ckpt_model(m, c);
    if (s != TT_OK) {
        char prefix[512];
        snprintf(prefix, sizeof prefix, "checkpoint '%s': ", path);
        tt_ckpt_free(c);
        tt_ckpt_init(c);
        return rewrap(s, prefix);
    }
    if (!ck) tt_ckpt_free(&own);
    return TT_OK;
}
