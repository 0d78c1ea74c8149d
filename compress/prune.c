// Pruning (torch.nn.utils.prune): magnitude pruning of entries per tensor or over a list, Ln
// structured pruning of slices, custom masks, applying and removing masks, sparsity, and masks
// restored from a checkpoint. Masks zero the tensors in place; nothing here records autograd.
#include "compress_internal.h"
#include "../io/checkpoint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- the registry ----

void tt_pruning_init(tt_pruning *p) {
    TT_CHECK(p, "the pruning state must not be NULL");
    tt_params_init(&p->params);
    tt_params_init(&p->masks);
}

void tt_pruning_free(tt_pruning *p) {
    if (!p) return;
    tt_params_free(&p->params);
    tt_params_free(&p->masks);
}

static int find(const tt_pruning *p, const char *name) {
    for (int i = 0; i < p->params.n; i++)
        if (strcmp(p->params.items[i].name, name) == 0) return i;
    return -1;
}

tt_tensor *tt_prune_mask(const tt_pruning *p, const char *name) {
    TT_CHECK(p && name, "the pruning state and the name must not be NULL");
    int i = find(p, name);
    return i < 0 ? NULL : p->masks.items[i].tensor;
}

// Aborts unless t can be pruned; func names the public function.
static void check_tensor(const char *func, const tt_pruning *p, const char *name,
                         const tt_tensor *t) {
    TT_CHECK_IN(func, p, "the pruning state is NULL; call tt_pruning_init first");
    TT_CHECK_IN(func, name && t, "the name and the tensor must not be NULL");
    TT_CHECK_IN(func, tt_dtype_is_float(t->dtype) && tt_is_contiguous(t), "'%s' %s %s must be "
                "a contiguous float tensor (a parameter)", name, tt__shape(t),
                tt_dtype_name(t->dtype));
    int i = find(p, name);
    TT_CHECK_IN(func, i < 0 || p->params.items[i].tensor == t, "'%s' is already pruned as "
                "another tensor; give each tensor its own name", name);
}

static void check_amount(const char *func, double amount) {
    TT_CHECK_IN(func, amount >= 0 && amount <= 1, "amount %g must be a fraction in [0, 1] (the "
                "share of the unpruned units to prune)", amount);
}

// The current mask of t as flags (all true when t is not pruned yet). keep: numel(t).
static void current_keep(const tt_pruning *p, const char *name, const tt_tensor *t,
                         bool *keep) {
    int64_t n = tt_numel(t);
    int i = find(p, name);
    if (i < 0) {
        for (int64_t j = 0; j < n; j++) keep[j] = true;
        return;
    }
    double *m = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *m);
    tt_to_f64_array(p->masks.items[i].tensor, m);
    for (int64_t j = 0; j < n; j++) keep[j] = m[j] != 0;
    tt_free(m);
}

// Zeroes the entries of t (contiguous float) where keep is false.
static void zero_pruned(tt_tensor *t, const bool *keep) {
    int64_t n = tt_numel(t);
    if (t->dtype == TT_F64) {
        double *w = tt_data_f64(t);
        for (int64_t i = 0; i < n; i++)
            if (!keep[i]) w[i] = 0.0;
    } else if (t->dtype == TT_F32) {
        float *w = tt_data_f32(t);
        for (int64_t i = 0; i < n; i++)
            if (!keep[i]) w[i] = 0.0f;
    } else {
        // bf16 and other float storage: through doubles.
        double *w = TT_MALLOC((size_t)n * sizeof *w);
        tt_to_f64_array(t, w);
        tt_tensor *z = tt__new(TT_F64, t->ndim, t->shape);
        double *zd = tt_data_f64(z);
        for (int64_t i = 0; i < n; i++) zd[i] = keep[i] ? w[i] : 0.0;
        tt_copy_(t, z);
        tt_release(z);
        tt_free(w);
    }
    tt_bump_version(t, "tt_prune_apply");
}

void tt_prune_custom(tt_pruning *p, const char *name, tt_tensor *t, const bool *keep) {
    check_tensor("tt_prune_custom", p, name, t);
    TT_CHECK(keep, "keep must not be NULL");
    int64_t n = tt_numel(t);
    int i = find(p, name);
    tt_tensor *mask;
    if (i < 0) {
        mask = tt__new_zeros(t->dtype, t->ndim, t->shape);  // a buffer: no grad
        tt_fill_(mask, 1.0);
        char mname[TT_NAME_MAX];
        TT_CHECK(strlen(name) + 5 < TT_NAME_MAX, "name '%s' is too long", name);
        snprintf(mname, sizeof mname, "%s_mask", name);
        tt_params_add(&p->params, NULL, name, t);
        tt_params_add(&p->masks, NULL, mname, mask);
        tt_release(mask);
    } else {
        mask = p->masks.items[i].tensor;
    }
    zero_pruned(mask, keep);  // combined with the earlier mask
    bool *all = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *all);
    current_keep(p, name, t, all);
    zero_pruned(t, all);
    tt_free(all);
}

void tt_prune_apply(const tt_pruning *p) {
    TT_CHECK(p, "the pruning state is NULL; call tt_pruning_init first");
    for (int i = 0; i < p->params.n; i++) {
        tt_tensor *t = p->params.items[i].tensor;
        int64_t n = tt_numel(t);
        bool *keep = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *keep);
        current_keep(p, p->params.items[i].name, t, keep);
        zero_pruned(t, keep);
        tt_free(keep);
    }
}

void tt_prune_remove(tt_pruning *p, const char *name) {
    TT_CHECK(p, "the pruning state is NULL; call tt_pruning_init first");
    if (!name) {
        tt_prune_apply(p);
        tt_params_free(&p->params);
        tt_params_free(&p->masks);
        return;
    }
    int i = find(p, name);
    TT_CHECK(i >= 0, "'%s' is not pruned; tt_prune_remove takes the name it was pruned under",
             name);
    tt_tensor *t = p->params.items[i].tensor;
    int64_t n = tt_numel(t);
    bool *keep = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *keep);
    current_keep(p, name, t, keep);
    zero_pruned(t, keep);
    tt_free(keep);
    // Drop entry i from both lists, keeping the order of the others.
    tt_param *lists[2] = {p->params.items, p->masks.items};
    for (int l = 0; l < 2; l++) {
        tt_free(lists[l][i].name);
        tt_release(lists[l][i].tensor);
        memmove(&lists[l][i], &lists[l][i + 1], (size_t)(p->params.n - i - 1) * sizeof *lists[l]);
    }
    p->params.n--;
    p->masks.n--;
}

// ---- magnitude: choosing the units to prune ----

typedef struct unit {
    double score;  // the magnitude (|w| or a slice's norm)
    int64_t index; // the unit's index: ties go in index order
} unit;

static int unit_cmp(const void *a, const void *b) {
    const unit *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

// Marks pruned[u.index] for the round(amount * n) units of the lowest score (n units).
static void choose(bool *pruned, unit *units, int64_t n, double amount) {
    int64_t k = (int64_t)nearbyint(amount * (double)n);  // round half to even
    if (k > n) k = n;
    qsort(units, (size_t)n, sizeof *units, unit_cmp);
    for (int64_t i = 0; i < k; i++) pruned[units[i].index] = true;
}

void tt_prune_l1_unstructured(tt_pruning *p, const char *name, tt_tensor *t, double amount) {
    check_tensor("tt_prune_l1_unstructured", p, name, t);
    check_amount("tt_prune_l1_unstructured", amount);
    tt_params one;
    tt_params_init(&one);
    tt_params_add(&one, NULL, name, t);
    tt_prune_global_unstructured(p, &one, amount);
    tt_params_free(&one);
}

void tt_prune_global_unstructured(tt_pruning *p, const tt_params *list, double amount) {
    TT_CHECK(list, "the tensor list must not be NULL");
    check_amount("tt_prune_global_unstructured", amount);
    int64_t total = 0;
    for (int i = 0; i < list->n; i++) {
        check_tensor("tt_prune_global_unstructured", p, list->items[i].name,
                     list->items[i].tensor);
        total += tt_numel(list->items[i].tensor);
    }
    size_t cap = (size_t)(total > 0 ? total : 1);
    bool *keep = TT_MALLOC(cap * sizeof *keep);      // (total) the current masks, concatenated
    bool *pruned = TT_MALLOC(cap * sizeof *pruned);  // (total) newly pruned
    double *v = TT_MALLOC(cap * sizeof *v);          // (total) the values
    unit *units = TT_MALLOC(cap * sizeof *units);
    int64_t off = 0, n = 0;
    for (int i = 0; i < list->n; i++) {
        const tt_tensor *t = list->items[i].tensor;
        current_keep(p, list->items[i].name, t, keep + off);
        tt_to_f64_array(t, v + off);
        off += tt_numel(t);
    }
    for (int64_t j = 0; j < total; j++) {
        pruned[j] = false;
        if (keep[j]) units[n++] = (unit){fabs(v[j]), j};
    }
    choose(pruned, units, n, amount);
    off = 0;
    for (int i = 0; i < list->n; i++) {
        tt_tensor *t = list->items[i].tensor;
        int64_t m = tt_numel(t);
        for (int64_t j = 0; j < m; j++) keep[off + j] = !pruned[off + j];
        tt_prune_custom(p, list->items[i].name, t, keep + off);
        off += m;
    }
    tt_free(units);
    tt_free(v);
    tt_free(pruned);
    tt_free(keep);
}

void tt_prune_ln_structured(tt_pruning *p, const char *name, tt_tensor *t, double amount,
                            double n, int dim) {
    check_tensor("tt_prune_ln_structured", p, name, t);
    check_amount("tt_prune_ln_structured", amount);
    TT_CHECK(n > 0 && !isnan(n), "norm order n=%g must be > 0 or INFINITY (2: L2, 1: L1)", n);
    TT_CHECK(t->ndim >= 1 && dim >= -t->ndim && dim < t->ndim, "dim %d is out of range for "
             "'%s' %s", dim, name, tt__shape(t));
    if (dim < 0) dim += t->ndim;
    int64_t S = t->shape[dim], inner = 1, numel = tt_numel(t);
    for (int d = dim + 1; d < t->ndim; d++) inner *= t->shape[d];
    size_t cap = (size_t)(numel > 0 ? numel : 1);
    bool *keep = TT_MALLOC(cap * sizeof *keep);
    double *v = TT_MALLOC(cap * sizeof *v);
    double *norm = TT_MALLOC((size_t)(S > 0 ? S : 1) * sizeof *norm);  // (S)
    bool *alive = TT_MALLOC((size_t)(S > 0 ? S : 1) * sizeof *alive);  // (S) not all pruned
    bool *pruned = TT_MALLOC((size_t)(S > 0 ? S : 1) * sizeof *pruned);
    unit *units = TT_MALLOC((size_t)(S > 0 ? S : 1) * sizeof *units);
    current_keep(p, name, t, keep);
    tt_to_f64_array(t, v);
    for (int64_t s = 0; s < S; s++) norm[s] = 0, alive[s] = false, pruned[s] = false;
    for (int64_t i = 0; i < numel; i++) {
        int64_t s = (i / inner) % S;
        double a = keep[i] ? fabs(v[i]) : 0;
        alive[s] |= keep[i];
        if (isinf(n)) norm[s] = fmax(norm[s], a);
        else norm[s] += pow(a, n);
    }
    int64_t m = 0;
    for (int64_t s = 0; s < S; s++)
        if (alive[s]) units[m++] = (unit){isinf(n) ? norm[s] : pow(norm[s], 1.0 / n), s};
    choose(pruned, units, m, amount);
    for (int64_t i = 0; i < numel; i++) keep[i] = !pruned[(i / inner) % S];
    tt_prune_custom(p, name, t, keep);
    tt_free(units);
    tt_free(pruned);
    tt_free(alive);
    tt_free(norm);
    tt_free(v);
    tt_free(keep);
}

// ---- sparsity ----

int64_t tt_count_nonzero(const tt_tensor *t) {
    TT_CHECK(t, "the tensor must not be NULL");
    int64_t n = tt_numel(t), nz = 0;
    double *v = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *v);
    tt_to_f64_array(t, v);
    for (int64_t i = 0; i < n; i++) nz += v[i] != 0;
    tt_free(v);
    return nz;
}

double tt_tensor_sparsity(const tt_tensor *t) {
    int64_t n = tt_numel(t);
    return n > 0 ? (double)(n - tt_count_nonzero(t)) / (double)n : 0.0;
}

double tt_sparsity(const tt_params *list) {
    TT_CHECK(list, "the tensor list must not be NULL");
    int64_t n = 0, nz = 0;
    for (int i = 0; i < list->n; i++) {
        n += tt_numel(list->items[i].tensor);
        nz += tt_count_nonzero(list->items[i].tensor);
    }
    return n > 0 ? (double)(n - nz) / (double)n : 0.0;
}

// ---- masks from a checkpoint ----

tt_status tt_prune_restore(tt_pruning *p, const tt_checkpoint *ck, const char *prefix,
                           const tt_params *list) {
    TT_CHECK(p && ck && list, "the pruning state, checkpoint and list must not be NULL");
    char key[2 * TT_NAME_MAX];
    // Check every mask first, so an error changes nothing.
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < list->n; i++) {
            const char *name = list->items[i].name;
            tt_tensor *t = list->items[i].tensor;
            snprintf(key, sizeof key, "%s%s_mask", prefix ? prefix : "", name);
            tt_tensor *m = tt_ckpt_get_tensor(ck, key);
            if (!m) continue;
            if (pass == 0) {
                bool same = m->dtype == t->dtype && m->ndim == t->ndim;
                for (int d = 0; same && d < t->ndim; d++) same = m->shape[d] == t->shape[d];
                if (!same)
                    return tt_set_error(TT_ERR_MISMATCH, "checkpoint mask '%s' is %s %s but "
                                        "'%s' is %s %s; the masks belong to another model",
                                        key, tt__shape(m), tt_dtype_name(m->dtype), name,
                                        tt__shape(t), tt_dtype_name(t->dtype));
            }
            int64_t n = tt_numel(m);
            double *v = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *v);
            bool *keep = TT_MALLOC((size_t)(n > 0 ? n : 1) * sizeof *keep);
            tt_to_f64_array(m, v);
            bool ok = true;
            for (int64_t j = 0; j < n; j++) {
                ok &= v[j] == 0 || v[j] == 1;
                keep[j] = v[j] != 0;
            }
            if (pass == 1) tt_prune_custom(p, name, t, keep);
            tt_free(keep);
            tt_free(v);
            if (!ok)
                return tt_set_error(TT_ERR_FORMAT, "checkpoint mask '%s' holds values other "
                                    "than 0 and 1; the file is corrupt", key);
        }
    }
    return TT_OK;
}
