#!/usr/bin/env python3
# PyTorch reference for tests/test_autograd_reference.c: gradients of gradients and custom
# functions, in f64 (torch 1.13).
#   wgan: a WGAN-GP critic step on a small MLP critic (4 -> 8 tanh -> 1): x_hat between real and
#     fake samples, the gradient of the critic's score at x_hat taken with create_graph=True,
#     the penalty 10 mean((|grad|_2 - 1)^2) added to mean(D(fake)) - mean(D(real)); the loss and
#     every parameter's gradient.
#   hvp: torch.autograd.functional.hvp of a small MLP's cross-entropy loss (3 -> 5 tanh -> 4)
#     in its parameters, v random; the loss and the product for each parameter.
#   unused: torch.autograd.grad(y, (a, b, c), allow_unused=True) with c unused: a's and b's
#     gradients (c's is None).
#   swish: a Swish written as a torch.autograd.Function (its own backward) inside a 2 -> 8 ->
#     1 MLP trained with SGD (lr 0.1) on an MSE loss for 20 steps: every step's loss and the
#     final parameters.
# Writes tests/reference/autograd_values.h (C arrays, 17 significant digits: f64 exact).
# Needs torch (Debian's python3-torch); `make test` never runs it.
#
#     /usr/bin/python3 tests/reference/gen_autograd_reference.py [OUT.h]
import os
import sys

import torch

from gradient_penalty import Swish  # the twin of examples/gradient_penalty.c

torch.set_default_dtype(torch.float64)


def rand(shape, seed, lo=-1.0, hi=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * (hi - lo) + lo


def linear(x, w, b):
    return x @ w.T + b


def wgan():
    w1, b1, w2, b2 = rand((8, 4), 1, -0.5, 0.5), rand(8, 2), rand((1, 8), 3), rand(1, 4)
    real, fake, eps = rand((6, 4), 5), rand((6, 4), 6), rand((6, 1), 7, 0, 1)
    params = [p.clone().requires_grad_() for p in (w1, b1, w2, b2)]

    def critic(x):
        return linear(torch.tanh(linear(x, params[0], params[1])), params[2], params[3])

    x_hat = (eps * real + (1 - eps) * fake).requires_grad_()
    (g,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * gp
    loss.backward()
    inputs = {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "real": real, "fake": fake, "eps": eps}
    outputs = {"loss": loss.detach(), "gp": gp.detach()}
    outputs.update({"grad_" + k: p.grad for k, p in zip(("w1", "b1", "w2", "b2"), params)})
    return inputs, outputs


def hvp():
    w1, b1, w2, b2 = rand((5, 3), 11), rand(5, 12), rand((4, 5), 13), rand(4, 14)
    x, y = rand((7, 3), 15, -2, 2), torch.tensor([0, 3, 1, 2, 3, 0, 1])
    v = [rand(p.shape, 20 + i) for i, p in enumerate((w1, b1, w2, b2))]

    def loss(w1, b1, w2, b2):
        return torch.nn.functional.cross_entropy(linear(torch.tanh(linear(x, w1, b1)), w2, b2), y)

    out, prods = torch.autograd.functional.hvp(loss, (w1, b1, w2, b2), tuple(v))
    inputs = {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "x": x, "y": y,
              "v_w1": v[0], "v_b1": v[1], "v_w2": v[2], "v_b2": v[3]}
    outputs = {"loss": out, "hvp_w1": prods[0], "hvp_b1": prods[1], "hvp_w2": prods[2],
               "hvp_b2": prods[3]}
    return inputs, outputs


def unused():
    a, b, c = (rand(3, 30 + i).requires_grad_() for i in range(3))
    y = (a * b).sum() + (a ** 2).sum() * 0.5
    ga, gb, gc = torch.autograd.grad(y, (a, b, c), allow_unused=True)
    assert gc is None
    return {"a": a.detach(), "b": b.detach()}, {"grad_a": ga, "grad_b": gb}


SWISH_STEPS = 20


def swish():
    w1, b1, w2, b2 = rand((8, 2), 41), rand(8, 42), rand((1, 8), 43), rand(1, 44)
    x = rand((16, 2), 45, -2, 2)
    t = torch.sin(x[:, :1] * 2) * x[:, 1:]
    params = [p.clone().requires_grad_() for p in (w1, b1, w2, b2)]
    losses = []
    for _ in range(SWISH_STEPS):
        pred = linear(Swish.apply(linear(x, params[0], params[1])), params[2], params[3])
        loss = ((pred - t) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.1 * p.grad
        losses.append(loss.item())
    inputs = {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "x": x, "t": t}
    outputs = {"losses": torch.tensor(losses)}
    outputs.update({"final_" + k: p.detach() for k, p in zip(("w1", "b1", "w2", "b2"), params)})
    return inputs, outputs


def arr(name, t):
    values = t.flatten().tolist()
    return "static const double %s[%d] = {%s};\n" % (
        name, len(values), ",".join("%.17g" % v for v in values))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "autograd_values.h")
    text = ("// Written by tests/reference/gen_autograd_reference.py (torch %s); do not edit.\n"
            "#define SWISH_STEPS %d\n" % (torch.__version__, SWISH_STEPS))
    for case, fn in (("wgan", wgan), ("hvp", hvp), ("unused", unused), ("swish", swish)):
        inputs, outputs = fn()
        for k, t in list(inputs.items()) + list(outputs.items()):
            text += arr("ref_%s_%s" % (case, k), t.detach().double())
    with open(out, "w") as f:
        f.write(text)
    print(out)


main()
