// The optimizer's part of a checkpoint, written and read the same way by the trainer's files
// and a model's (models/gpt): the state tensors, the step count, and each parameter group's
// kind and hyperparameters, so a resumed run continues with the groups' own settings.
#include <stdio.h>

#include "train.h"

// "optim.group.<g>.<key>" into key.
static const char *group_key(char *key, size_t n, int g, const char *name) {
    snprintf(key, n, "optim.group.%d.%s", g, name);
    return key;
}

void tt_ckpt_add_optim(tt_checkpoint *ck, const tt_optim *o) {
    tt_params s;
    tt_params_init(&s);
    tt_optim_state(o, &s);
    tt_ckpt_add_params(ck, "optim.", &s);
    tt_params_free(&s);
    tt_ckpt_set_i64(ck, "optim.step", o->step);
    char key[96];
    for (int g = 0; g < o->ngroups; g++) {
        tt_optim_hparam h[TT_OPTIM_HPARAMS];
        tt_optim_group_hparams((tt_optim *)o, g, h);
        tt_ckpt_set_i64(ck, group_key(key, sizeof key, g, "kind"), o->groups[g].cfg.kind);
        for (int i = 0; i < TT_OPTIM_HPARAMS; i++)
            tt_ckpt_set_f64(ck, group_key(key, sizeof key, g, h[i].name), *h[i].value);
    }
}

// TT_ERR_MISMATCH unless ck's groups (when it names them: older files do not) have o's kinds.
static tt_status check_groups(const tt_checkpoint *ck, const tt_optim *o) {
    char key[96];
    int64_t kind;
    if (tt_ckpt_get_i64(ck, group_key(key, sizeof key, o->ngroups, "kind"), &kind))
        return tt_set_error(TT_ERR_MISMATCH,
                            "it has more parameter groups than the optimizer's "
                            "%d; build the optimizer as the run that saved it did",
                            o->ngroups);
    for (int g = 0; g < o->ngroups; g++) {
        tt_optim_kind now = o->groups[g].cfg.kind;
        if (tt_ckpt_get_i64(ck, group_key(key, sizeof key, g, "kind"), &kind) && kind != now)
            return tt_set_error(TT_ERR_MISMATCH,
                                "parameter group %d was %s when saved but is "
                                "%s now; build the optimizer as the run that saved it did",
                                g,
                                kind >= 0 && kind < TT_OPTIM_KIND_COUNT
                                    ? tt_optim_kind_name((tt_optim_kind)kind)
                                    : "unknown",
                                tt_optim_kind_name(now));
    }
    return TT_OK;
}

tt_status tt_ckpt_restore_optim_state(const tt_checkpoint *ck, tt_optim *o) {
    int64_t step;
    if (!tt_ckpt_get_i64(ck, "optim.step", &step) || step < 0)
        return tt_set_error(TT_ERR_FORMAT, "no valid optim.step (no optimizer state saved)");
    tt_status st = check_groups(ck, o);
    if (st != TT_OK) return st;
    tt_params s;
    tt_params_init(&s);
    tt_optim_state(o, &s);
    st = tt_ckpt_restore_params(ck, "optim.", &s);
    tt_params_free(&s);
    if (st != TT_OK) return st;
    o->step = step;
    return TT_OK;
}

tt_status tt_ckpt_restore_optim(const tt_checkpoint *ck, tt_optim *o) {
    tt_status st = tt_ckpt_restore_optim_state(ck, o);
    if (st != TT_OK) return st;
    // The hyperparameters: those a file lacks (older files) keep o's.
    char key[96];
    for (int g = 0; g < o->ngroups; g++) {
        tt_optim_hparam h[TT_OPTIM_HPARAMS];
        tt_optim_group_hparams(o, g, h);
        for (int i = 0; i < TT_OPTIM_HPARAMS; i++)
            tt_ckpt_get_f64(ck, group_key(key, sizeof key, g, h[i].name), h[i].value);
    }
    return TT_OK;
}
