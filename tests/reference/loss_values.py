# Prints the PyTorch (1.13) values that tests/test_losses.c checks: forward values of every loss
# under each reduction and the gradients of the inputs, in f64. Run with /usr/bin/python3; the
# output is pasted into the test by hand (make test never needs PyTorch).
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def show(name, t):
    t = t.detach().reshape(-1)
    print(f"{name}: " + ", ".join("%.17g" % v for v in t.tolist()))


def leaf(v):
    return torch.tensor(v, requires_grad=True)


X = [[0.5, -1.2, 2.0], [0.3, 0.9, -0.4]]
Y = [[-0.5, 0.4, -1.0], [0.3, 2.5, 0.0]]  # |x - y| = 1 (= beta, delta), 1.6, 3, 0, 1.6, 0.4

for red in ["none", "mean", "sum"]:
    for name, fn in [("mse", lambda x, y, r: F.mse_loss(x, y, reduction=r)),
                     ("l1", lambda x, y, r: F.l1_loss(x, y, reduction=r)),
                     ("smooth_l1_b1",
                      lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=1.0)),
                     ("smooth_l1_b2",
                      lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=2.0)),
                     ("huber_d1", lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=1.0)),
                     ("huber_d05", lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=0.5))]:
        x, y = leaf(X), leaf(Y)
        out = fn(x, y, red)
        show(f"{name} {red}", out)
        if red == "mean":
            out.backward()
            show(f"{name} {red} dx", x.grad)
            show(f"{name} {red} dy", y.grad)

# kl_div: input log-probabilities, target probabilities with a 0.
LOGP = torch.log_softmax(torch.tensor([[0.2, -0.3, 1.1], [0.5, 0.5, -1.0]]), 1).tolist()
T = [[0.2, 0.0, 0.8], [0.5, 0.3, 0.2]]
print("kl input: " + ", ".join("%.17g" % v for row in LOGP for v in row))
for red in ["none", "mean", "sum", "batchmean"]:
    for log_target in [False, True]:
        x = leaf(LOGP)
        t = leaf(T) if not log_target else leaf([[-1.5, -0.2, -2.0], [-0.7, -1.1, -0.9]])
        out = F.kl_div(x, t, reduction=red, log_target=log_target)
        show(f"kl {red} log_target={log_target}", out)
        out.sum().backward()
        show(f"kl {red} log_target={log_target} dx", x.grad)
        if log_target:
            show(f"kl {red} log_target={log_target} dt", t.grad)

# binary_cross_entropy: clamped logs at p = 0 and p = 1 (forward only there).
P = [[0.2, 0.0, 0.9], [1.0, 0.6, 0.35]]
TB = [[0.0, 1.0, 1.0], [0.0, 0.3, 1.0]]
W = [0.5, 2.0, 1.0]
for red in ["none", "mean", "sum"]:
    show(f"bce {red}", F.binary_cross_entropy(torch.tensor(P), torch.tensor(TB), reduction=red))
    show(f"bce w {red}", F.binary_cross_entropy(torch.tensor(P), torch.tensor(TB),
                                                 weight=torch.tensor(W), reduction=red))
PI = [[0.2, 0.05, 0.9], [0.7, 0.6, 0.35]]
p = leaf(PI)
F.binary_cross_entropy(p, torch.tensor(TB), weight=torch.tensor(W)).backward()
show("bce interior w mean dp", p.grad)

# bce_with_logits with a weight
L = [[0.2, -3.0, 1.5], [4.0, 0.0, -0.7]]
for red in ["none", "mean", "sum"]:
    x = leaf(L)
    out = F.binary_cross_entropy_with_logits(x, torch.tensor(TB), weight=torch.tensor(W),
                                             reduction=red)
    show(f"bcel w {red}", out)
    out.sum().backward()
    show(f"bcel w {red} dx", x.grad)

# nll_loss (3, 4), a weight, an ignored target (-100) and a custom ignore_index
Z = [[0.1, -0.4, 1.2, 0.3], [2.0, 0.5, -1.0, 0.0], [-0.3, 0.8, 0.4, 1.5]]
LZ = torch.log_softmax(torch.tensor(Z), 1).tolist()
print("nll logp: " + ", ".join("%.17g" % v for row in LZ for v in row))
WN = [0.2, 1.0, 0.5, 2.0]
for red in ["none", "mean", "sum"]:
    for wname, w in [("", None), (" w", torch.tensor(WN))]:
        x = leaf(LZ)
        out = F.nll_loss(x, torch.tensor([1, -100, 3]), weight=w, reduction=red)
        show(f"nll{wname} {red}", out)
        out.sum().backward()
        show(f"nll{wname} {red} dx", x.grad)
x = leaf(LZ)
out = F.nll_loss(x, torch.tensor([1, 2, 2]), ignore_index=2, weight=torch.tensor(WN))
show("nll ignore2 w mean", out)
print("nll all ignored mean:", F.nll_loss(torch.tensor(LZ), torch.tensor([-100, -100, -100])))

# nll_loss and cross_entropy on (N, C, d) = (2, 3, 2), targets (2, 2)
Q = [[[0.3, -0.2], [1.0, 0.4], [-0.5, 0.9]], [[0.0, 0.7], [-1.2, 0.1], [0.6, -0.3]]]
TQ = torch.tensor([[2, 0], [1, -100]])
WQ = torch.tensor([1.0, 0.5, 2.0])
for red in ["none", "mean", "sum"]:
    x = leaf(Q)
    out = F.cross_entropy(x, TQ, weight=WQ, reduction=red)
    show(f"ce3d w {red}", out)
    out.sum().backward()
    show(f"ce3d w {red} dx", x.grad)
x = leaf(Q)
out = F.nll_loss(x, TQ)
show("nll3d mean", out)
out.backward()
show("nll3d mean dx", x.grad)
# (C,) input with a 0-dim target
show("nll1d none", F.nll_loss(torch.tensor(LZ[0]), torch.tensor(2), reduction="none"))

# cross_entropy with label smoothing 0.1: a weight, an ignored target, (N, C, d) and (N, C)
for red in ["none", "mean", "sum"]:
    x = leaf(Q)
    out = F.cross_entropy(x, TQ, weight=WQ, reduction=red, label_smoothing=0.1)
    show(f"ce3d w ls {red}", out)
    out.sum().backward()
    show(f"ce3d w ls {red} dx", x.grad)
x = leaf(Z)
out = F.cross_entropy(x, torch.tensor([1, -100, 3]), label_smoothing=0.25)
show("ce2d ls mean", out)
out.backward()
show("ce2d ls mean dx", x.grad)
