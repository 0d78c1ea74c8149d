# Writes tests/reference/schedule_values.h: learning-rate sequences of PyTorch's schedulers,
# read by tests/test_schedule.c. OneCycleLR (cos and linear, two and three phases) with the
# momentum it writes to Adam's betas[0]; ReduceLROnPlateau driven by fixed metric sequences
# (min and max mode, rel and abs threshold, cooldown, min_lr, eps); LambdaLR with two
# functions test_schedule.c writes in C too; and nanochat's warmup-stable-decay multiplier,
# written out below from its get_lr_multiplier (nanochat is not a package).
# Run: /usr/bin/python3 tests/reference/schedule_values.py [OUT]  (PyTorch 1.13; make test
# never does)
import math
import os
import sys

import torch
from torch.optim.lr_scheduler import LambdaLR, OneCycleLR, ReduceLROnPlateau


def carr(name, vals):
    return "static const double %s[%d] = {%s};\n" % (
        name, len(vals), ",".join("%.17g" % v for v in vals))


def optimizer(cls=torch.optim.Adam, lr=1.0):
    return cls([torch.zeros(1, requires_grad=True)], lr=lr)


# ---- OneCycleLR ----

# name, max_lr, total_steps, pct_start, anneal, div_factor, final_div_factor, three_phase,
# base_momentum, max_momentum
ONECYCLE = [
    ("cos", 0.01, 100, 0.3, "cos", 25.0, 1e4, False, 0.85, 0.95),
    ("linear", 0.01, 100, 0.3, "linear", 25.0, 1e4, False, 0.85, 0.95),
    ("cos_three", 0.01, 100, 0.3, "cos", 25.0, 1e4, True, 0.85, 0.95),
    ("linear_three", 0.01, 100, 0.3, "linear", 25.0, 1e4, True, 0.85, 0.95),
    # fractional phase ends, other factors and momenta
    ("cos_odd", 3e-3, 37, 0.25, "cos", 10.0, 100.0, False, 0.8, 0.9),
    ("linear_three_odd", 0.5, 23, 0.35, "linear", 5.0, 50.0, True, 0.7, 0.99),
]


def onecycle(case):
    name, max_lr, total, pct, anneal, div, fdiv, three, base_m, max_m = case
    opt = optimizer()
    sched = OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=pct,
                       anneal_strategy=anneal, div_factor=div, final_div_factor=fdiv,
                       three_phase=three, base_momentum=base_m, max_momentum=max_m)
    lrs, moms = [], []
    for it in range(total + 1):  # iterations 0 .. total_steps are valid
        lrs.append(sched.get_last_lr()[0])
        moms.append(opt.param_groups[0]["betas"][0])
        if it < total:
            opt.step()
            sched.step()
    text = carr("onecycle_%s_lr" % name, lrs) + carr("onecycle_%s_mom" % name, moms)
    row = ('    {"%s", %.17g, %d, %.17g, %s, %.17g, %.17g, %s, %.17g, %.17g, %d, '
           'onecycle_%s_lr, onecycle_%s_mom},\n' % (
               name, max_lr, total, pct, "TT_LR_ANNEAL_COS" if anneal == "cos"
               else "TT_LR_ANNEAL_LINEAR", div, fdiv, "true" if three else "false", base_m,
               max_m, total + 1, name, name))
    return text, row


# ---- ReduceLROnPlateau ----

# A loss that falls, stalls (changes smaller than a rel threshold of 1e-2 but larger than an
# abs one of 1e-3), falls again and rises: every rule of the scheduler gets exercised.
LOSS = [2.0, 1.5, 1.2, 1.19, 1.195, 1.1899, 1.1895, 1.189, 1.1889, 1.19, 1.0, 0.99,
        0.985, 0.984, 0.9835, 0.983, 0.99, 1.0, 0.9, 0.899, 0.8985, 0.898, 0.9, 0.95,
        0.7, 0.6999, 0.6998, 0.6997, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.5, 0.5]
ACC = [1.0 - v / 2.0 for v in LOSS]  # an accuracy: max mode
# Long stalls, for PyTorch's defaults (patience 10, threshold 1e-4 relative).
STALL = [1.0, 0.9, 0.8] + [0.79999] * 12 + [0.7] + [0.70001] * 12
METRICS = {"loss": LOSS, "acc": ACC, "stall": STALL}

# name, lr, metrics, mode, factor, patience, threshold, threshold_mode, cooldown, min_lr, eps
PLATEAU = [
    ("min_rel", 0.1, "loss", "min", 0.5, 2, 1e-2, "rel", 0, 0.0, 1e-8),
    ("min_abs", 0.1, "loss", "min", 0.5, 2, 1e-3, "abs", 0, 0.0, 1e-8),
    ("max_rel", 0.1, "acc", "max", 0.5, 2, 1e-2, "rel", 0, 0.0, 1e-8),
    ("max_abs", 0.1, "acc", "max", 0.5, 2, 1e-3, "abs", 0, 0.0, 1e-8),
    ("cooldown", 0.1, "loss", "min", 0.3, 1, 1e-4, "rel", 3, 0.0, 1e-8),
    ("min_lr", 0.1, "loss", "min", 0.1, 0, 1e-4, "rel", 0, 2.5e-3, 1e-8),
    ("eps", 1e-7, "loss", "min", 0.5, 0, 1e-4, "rel", 0, 0.0, 4e-8),
    ("defaults", 1e-3, "stall", "min", 0.1, 10, 1e-4, "rel", 0, 0.0, 1e-8),
]


def plateau(case):
    name, lr, which, mode, factor, patience, thr, thr_mode, cooldown, min_lr, eps = case
    metrics = METRICS[which]
    opt = optimizer(torch.optim.SGD, lr)
    sched = ReduceLROnPlateau(opt, mode=mode, factor=factor, patience=patience, threshold=thr,
                              threshold_mode=thr_mode, cooldown=cooldown, min_lr=min_lr,
                              eps=eps)
    lrs, bad = [], []
    for m in metrics:
        sched.step(m)
        lrs.append(opt.param_groups[0]["lr"])
        bad.append(sched.num_bad_epochs)
    text = carr("plateau_%s_lr" % name, lrs) + carr("plateau_%s_bad" % name, bad)
    row = ('    {"%s", %.17g, plateau_%s, %s, %.17g, %d, %.17g, %s, %d, %.17g, %.17g, %d, '
           'plateau_%s_lr, plateau_%s_bad, %.17g},\n' % (
               name, lr, which, "TT_LR_MODE_MIN" if mode == "min" else "TT_LR_MODE_MAX",
               factor, patience, thr, "TT_LR_THRESHOLD_REL" if thr_mode == "rel"
               else "TT_LR_THRESHOLD_ABS", cooldown, min_lr, eps, len(metrics), name, name,
               sched.best))
    return text, row


# ---- LambdaLR ----

# The same functions as test_schedule.c's lambda_fns (index 0, 1).
LAMBDAS = [
    ("exp", 0.05, lambda it: 0.95 ** it),
    ("inv_warm", 3e-4, lambda it: min(1.0, (it + 1) / 8) / math.sqrt(1 + 0.1 * it)),
]
LAMBDA_STEPS = 40


def lambda_lr(index, case):
    name, lr, fn = case
    opt = optimizer(torch.optim.SGD, lr)
    sched = LambdaLR(opt, fn)
    lrs = []
    for _ in range(LAMBDA_STEPS):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    text = carr("lambda_%s_lr" % name, lrs)
    row = '    {"%s", %.17g, %d, %d, lambda_%s_lr},\n' % (name, lr, index, len(lrs), name)
    return text, row


# ---- warmup-stable-decay: nanochat's get_lr_multiplier ----

def wsd_multiplier(it, warmup_iters, warmdown_iters, num_iterations, final_lr_frac):
    if it < warmup_iters:
        return (it + 1) / warmup_iters
    elif it <= num_iterations - warmdown_iters:
        return 1.0
    else:
        progress = (num_iterations - it) / warmdown_iters
        return progress * 1.0 + (1 - progress) * final_lr_frac


# name, lr, warmup, warmdown, total, final_frac
WSD = [
    ("nanochat", 0.02, 0, 40, 200, 0.0),
    ("warm", 6e-4, 10, 20, 100, 0.1),
    ("no_warmdown", 1e-3, 5, 0, 50, 0.0),
    ("all_warmdown", 1e-2, 3, 30, 30, 0.05),
]


def wsd(case):
    name, lr, w, d, n, frac = case
    lrs = [lr * wsd_multiplier(it, w, d, n, frac) for it in range(n + 1)]
    text = carr("wsd_%s_lr" % name, lrs)
    row = '    {"%s", %.17g, %d, %d, %d, %.17g, %d, wsd_%s_lr},\n' % (
        name, lr, w, d, n, frac, len(lrs), name)
    return text, row


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "schedule_values.h")
    text = ["// Generated by tests/reference/schedule_values.py (torch %s); do not edit.\n"
            % torch.__version__,
            carr("plateau_loss", LOSS), carr("plateau_acc", ACC), carr("plateau_stall", STALL)]
    tables = [
        ("onecycle_ref", "onecycle_refs",
         "    const char *name;\n    double max_lr;\n    int64_t total_steps;\n"
         "    double pct_start;\n    tt_lr_anneal anneal;\n"
         "    double div_factor, final_div_factor;\n    bool three_phase;\n"
         "    double base_momentum, max_momentum;\n"
         "    int n;  // total_steps + 1: iterations 0 .. total_steps\n"
         "    const double *lr, *momentum;  // (n) the lr and Adam's betas[0] at each\n",
         [onecycle(c) for c in ONECYCLE]),
        ("plateau_ref", "plateau_refs",
         "    const char *name;\n    double lr;\n    const double *metrics;\n"
         "    tt_lr_mode mode;\n    double factor;\n    int64_t patience;\n"
         "    double threshold;\n    tt_lr_threshold_mode threshold_mode;\n"
         "    int64_t cooldown;\n    double min_lr, eps;\n"
         "    int n;  // observations\n"
         "    const double *lr_after, *bad_after;  // (n) lr, num_bad_epochs after each step\n"
         "    double best;  // after the last\n",
         [plateau(c) for c in PLATEAU]),
        ("lambda_ref", "lambda_refs",
         "    const char *name;\n    double lr;\n    int fn;  // lambda_fns[fn]\n"
         "    int n;\n    const double *lr_at;  // (n) iterations 0 .. n - 1\n",
         [lambda_lr(i, c) for i, c in enumerate(LAMBDAS)]),
        ("wsd_ref", "wsd_refs",
         "    const char *name;\n    double lr;\n"
         "    int64_t warmup, warmdown, total;\n    double final_frac;\n"
         "    int n;  // total + 1: iterations 0 .. total\n    const double *lr_at;\n",
         [wsd(c) for c in WSD]),
    ]
    for struct, array, fields, cases in tables:
        text.append("typedef struct %s {\n%s} %s;\n" % (struct, fields, struct))
        text.extend(t for t, _ in cases)
        text.append("static const %s %s[] = {\n%s};\n" % (struct, array,
                                                          "".join(r for _, r in cases)))
    with open(out, "w") as f:
        f.write("".join(text))
    print("wrote %s: %d onecycle, %d plateau, %d lambda, %d wsd sequences" % (
        out, len(ONECYCLE), len(PLATEAU), len(LAMBDAS), len(WSD)))


if __name__ == "__main__":
    main()
