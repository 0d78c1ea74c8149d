#!/usr/bin/env python3
# PyTorch reference for tests/test_optim.c's RMSprop, Adagrad, Lion and Muon cases: four steps
# of each optimizer on f64 parameters with fixed gradients. RMSprop and Adagrad are
# torch.optim's (torch 1.13). Lion and Muon are not in torch 1.13, so their updates are written
# out below with torch ops: Lion as Chen et al. 2023 define it, Muon as torch.optim.Muon
# (later torch releases) computes it (momentum by lerp, Nesterov, Newton-Schulz by addmm, the
# update scaled by sqrt(max(1, rows / cols)), decoupled weight decay).
# Writes tests/reference/optim_values.h (C arrays, 17 significant digits: f64 exact).
# Needs torch (Debian's python3-torch); `make test` never runs it.
#
#     /usr/bin/python3 tests/reference/gen_optim_reference.py [OUT.h]
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float64)
STEPS = 4


def grads(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g) * (1 + 0.5 * s) for s in range(STEPS)]


def start(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g)


def run(shape, seed, make, update=None):
    """Parameters after each step, by torch.optim (make) or a hand-written update."""
    p = torch.nn.Parameter(start(shape, seed))
    opt = make([p]) if make else None
    state = {}
    out = []
    for g in grads(shape, seed + 1):
        if opt:
            p.grad = g.clone()
            opt.step()
        else:
            with torch.no_grad():
                update(p, g.clone(), state)
        out.append(p.detach().clone())
    return out


def lion(lr, b1, b2, wd):
    def update(p, g, st):
        m = st.setdefault("m", torch.zeros_like(p))
        p.mul_(1 - lr * wd)
        p.add_((m * b1 + g * (1 - b1)).sign(), alpha=-lr)
        m.mul_(b2).add_(g, alpha=1 - b2)
    return update


def newton_schulz(u, coeffs, steps, eps):
    a, b, c = coeffs
    x = u.T if u.size(0) > u.size(1) else u
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        upd = torch.addmm(gram, gram, gram, beta=b, alpha=c)
        x = torch.addmm(x, upd, x, beta=a)
    return x.T if u.size(0) > u.size(1) else x


def muon(lr, momentum, nesterov, wd, coeffs=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7):
    def update(p, g, st):
        buf = st.setdefault("buf", torch.zeros_like(p))
        buf.lerp_(g, 1 - momentum)
        u = g.lerp(buf, momentum) if nesterov else buf
        o = newton_schulz(u, coeffs, steps, eps)
        p.mul_(1 - lr * wd)
        p.add_(o, alpha=-lr * math.sqrt(max(1, p.size(0) / p.size(1))))
    return update


O = torch.optim
CASES = [  # name, shape, seed, torch.optim factory or None, hand-written update or None
    ("rmsprop", (2, 3), 10, lambda ps: O.RMSprop(ps, lr=0.01), None),
    ("rmsprop_all", (2, 3), 20, lambda ps: O.RMSprop(ps, lr=0.02, alpha=0.9, eps=1e-6,
                                                     weight_decay=0.1, momentum=0.8,
                                                     centered=True), None),
    ("adagrad", (2, 3), 30, lambda ps: O.Adagrad(ps, lr=0.1), None),
    ("adagrad_all", (2, 3), 40, lambda ps: O.Adagrad(ps, lr=0.1, lr_decay=0.3, weight_decay=0.2,
                                                     initial_accumulator_value=0.5, eps=1e-6),
     None),
    ("lion", (2, 3), 50, None, lion(0.01, 0.9, 0.99, 0.0)),
    ("lion_wd", (2, 3), 60, None, lion(0.03, 0.8, 0.95, 0.5)),
    ("muon_wide", (3, 5), 70, None, muon(0.02, 0.95, True, 0.0)),
    ("muon_tall", (5, 3), 80, None, muon(0.02, 0.9, False, 0.1)),
]


def arr(name, values):
    return "static const double %s[%d] = {%s};\n" % (
        name, len(values), ",".join("%.17g" % v for v in values))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "optim_values.h")
    text = ("// Written by tests/reference/gen_optim_reference.py (torch %s); do not edit.\n"
            "// Per case: p0 (start), g (STEPS gradients), p (parameters after each step).\n"
            "#define OPTIM_REF_STEPS %d\n" % (torch.__version__, STEPS))
    for name, shape, seed, make, update in CASES:
        text += arr("ref_%s_p0" % name, start(shape, seed).flatten().tolist())
        text += arr("ref_%s_g" % name,
                    [v for g in grads(shape, seed + 1) for v in g.flatten().tolist()])
        text += arr("ref_%s_p" % name,
                    [v for p in run(shape, seed, make, update) for v in p.flatten().tolist()])
    with open(out, "w") as f:
        f.write(text)
    print(out, len(CASES), "cases")


main()
