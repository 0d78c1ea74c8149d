# Prints PyTorch's values for the math ops of tests/test_ops_math.c (sin ... elu, clamp,
# softplus, logsumexp, std, vector_norm) as C arrays: the forward values and the gradients
# for a gradient of ones, in f64. Run with torch 1.13 (make test never needs it):
#     /usr/bin/python3 tests/reference/math_values.py
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=17)
nan, inf = float("nan"), float("inf")
dt = torch.float64

# The elementwise inputs: halves (round to even), signed zeros, the clamp bounds, NaN, +-inf.
X = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 0.3, -0.7, 1.0, -1.0, nan, inf, -inf]


def c(v):
    if v != v:
        return "NAN"
    if v == inf:
        return "INFINITY"
    if v == -inf:
        return "-INFINITY"
    return repr(float(v))


def arr(name, t):  # one C array, lines of at most 100 columns
    vals = [c(v) for v in t.detach().reshape(-1).tolist()]
    line = "static const double %s[] = {" % name
    for i, v in enumerate(vals):
        item = v + ("," if i + 1 < len(vals) else "};")
        if len(line) + 1 + len(item) > 100:
            print(line.rstrip())
            line = "    "
        line += ("" if line.endswith("{") or line == "    " else " ") + item
    print(line)


def run(name, f, x):
    x = x.clone().requires_grad_(True)
    y = f(x)
    y.backward(torch.ones_like(y))
    arr(name + "_y", y)
    arr(name + "_dx", x.grad)


x = torch.tensor(X, dtype=dt)
arr("X", x)
for name, f in [
    ("sin", torch.sin), ("cos", torch.cos), ("log1p", torch.log1p), ("expm1", torch.expm1),
    ("reciprocal", torch.reciprocal), ("sign", torch.sign), ("floor", torch.floor),
    ("ceil", torch.ceil), ("round", torch.round),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.2)), ("elu", lambda t: F.elu(t, 1.5)),
    ("clamp", lambda t: torch.clamp(t, -0.5, 1.5)),
    ("clamp_lo", lambda t: torch.clamp(t, min=0.5)),
    ("clamp_hi", lambda t: torch.clamp(t, max=-0.5)),
    ("clamp_crossed", lambda t: torch.clamp(t, 1.0, -1.0)),
    ("softplus", F.softplus),
]:
    run(name, f, x)

S = torch.tensor([-1000.0, -30.0, -3.0, 0.0, 1.4, 1.6, 3.0, 19.0, 21.0, 1000.0], dtype=dt)
arr("S", S)
run("softplus_big", F.softplus, S)
run("softplus_b2t3", lambda t: F.softplus(t, beta=2, threshold=3), S)
run("softplus_b05", lambda t: F.softplus(t, beta=0.5), S)

# logsumexp over the last dim of (5, 3) rows: plain, all -inf, a +inf, large, with NaN.
L = torch.tensor([[1.0, 2.0, 3.0], [-inf, -inf, -inf], [inf, 1.0, 2.0],
                  [1000.0, 1000.5, -1000.0], [-0.5, 0.25, -2.0]], dtype=dt)
arr("L", L)
run("logsumexp_last", lambda t: torch.logsumexp(t, -1), L)
R = torch.tensor([[0.5, -1.25, 2.0, 0.75], [3.0, 3.0, 3.0, 3.0], [-2.0, 1.0, 0.0, 4.5]],
                 dtype=dt)
arr("R", R)
run("logsumexp_dim0_keep", lambda t: torch.logsumexp(t, 0, keepdim=True), R)
run("std_dim1", lambda t: torch.std(t, 1, unbiased=True), R)
run("std_dim0_biased_keep", lambda t: torch.std(t, 0, unbiased=False, keepdim=True), R)
run("std_all", lambda t: torch.std(t), R)
N = torch.tensor([[0.5, -1.25, 2.0, -2.0], [0.0, 0.0, 0.0, 0.0], [-3.0, 1.0, 3.0, 0.0]],
                 dtype=dt)
arr("N", N)
for p, pn in ((1, "1"), (2, "2"), (inf, "inf")):
    run("norm%s_dim1" % pn, lambda t: torch.linalg.vector_norm(t, p, dim=1), N)
    run("norm%s_all" % pn, lambda t: torch.linalg.vector_norm(t, p), N)
