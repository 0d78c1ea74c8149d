# Writes tests/reference/cnn_values.h: reference numbers for the BatchNorm1d/2d modules, the
# pooling modules and a small CNN (tt_nn_sequential), read by tests/test_nn_cnn.c.
#   bn_*:   3 training steps then one eval step of nn.BatchNorm1d / BatchNorm2d (f64): per
#           step x, g, y, and the gradients of sum(y * g) for x, weight and bias; the running
#           stats after each training step.
#   pool_*: nn.MaxPool2d / AvgPool2d / AdaptiveAvgPool2d (f64): x, g, y, the gradient of x.
#   cnn_*:  conv-bn-relu-maxpool-conv-bn-relu-avgpool-flatten-linear, in f64 and in f32 (the
#           f64 weights rounded): its state_dict before and after one training step, the
#           logits and every parameter's gradient of the mean cross-entropy in train mode,
#           then the same in eval mode.
# Run: /usr/bin/python3 tests/reference/cnn_values.py [OUT]  (PyTorch 1.13; make test never does)
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)


def carr(name, vals, fmt="%.17g"):
    return "static const double %s[%d] = {%s};\n" % (
        name, len(vals), ",".join(fmt % v for v in vals))


def flat(t):
    return t.detach().double().reshape(-1).tolist()


def shape4(s):
    s = list(s) + [0] * (4 - len(s))
    return "{%s}" % ", ".join(str(v) for v in s)


# name, dims, x shape, momentum (None: cumulative), affine, track_running_stats
BN_CASES = [
    ("bn2d", 2, (4, 3, 5, 5), 0.1, True, True),
    ("bn1d_nc", 1, (6, 4), None, True, True),
    ("bn1d_ncl", 1, (3, 2, 5), 0.3, False, True),
    ("bn2d_untracked", 2, (2, 3, 3, 4), 0.1, True, False),
]


def bn_cases(text):
    rows = []
    for name, dims, xs, mom, affine, track in BN_CASES:
        C = xs[1]
        cls = nn.BatchNorm1d if dims == 1 else nn.BatchNorm2d
        m = cls(C, momentum=mom, affine=affine, track_running_stats=track).double()
        if affine:  # away from the init so a swapped weight or bias shows
            with torch.no_grad():
                m.weight.copy_(1 + 0.3 * torch.randn(C, dtype=torch.float64))
                m.bias.copy_(0.2 * torch.randn(C, dtype=torch.float64))
            text.append(carr(name + "_w", flat(m.weight)))
            text.append(carr(name + "_b", flat(m.bias)))
        acc = {k: [] for k in ("x", "g", "y", "dx", "dw", "db", "rm", "rv")}
        for step in range(4):
            if step == 3:
                m.eval()
            x = (torch.randn(xs, dtype=torch.float64) * 1.5 + 0.5).requires_grad_()
            y = m(x)
            g = torch.randn(y.shape, dtype=torch.float64)
            if affine:
                m.weight.grad = None
                m.bias.grad = None
            (y * g).sum().backward()
            acc["x"] += flat(x)
            acc["g"] += flat(g)
            acc["y"] += flat(y)
            acc["dx"] += flat(x.grad)
            if affine:
                acc["dw"] += flat(m.weight.grad)
                acc["db"] += flat(m.bias.grad)
            if step < 3 and track:
                acc["rm"] += flat(m.running_mean)
                acc["rv"] += flat(m.running_var)
        for k, v in acc.items():
            if v:
                text.append(carr("%s_%s" % (name, k), v))
        if track:
            assert int(m.num_batches_tracked) == 3
        ref = lambda k: ("%s_%s" % (name, k)) if acc[k] else "NULL"
        rows.append('    {"%s", %d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s},\n' % (
            name, dims, len(xs), shape4(xs), "NAN" if mom is None else repr(mom),
            "true" if affine else "false", "true" if track else "false",
            (name + "_w") if affine else "NULL", (name + "_b") if affine else "NULL",
            ref("x"), ref("g"), ref("y"), ref("dx"), ref("dw"), ref("db"),
            ref("rm") + ", " + ref("rv")))
    text.append("typedef struct bn_ref {\n    const char *name;\n    int dims, ndim;\n"
                "    int64_t shape[4];\n    double momentum;  // NAN: cumulative (None)\n"
                "    bool affine, track;\n    const double *w, *b;\n"
                "    // 4 steps each (3 train, 1 eval), concatenated\n"
                "    const double *x, *g, *y, *dx, *dw, *db;\n"
                "    const double *rm, *rv;  // after each training step (3 x C)\n} bn_ref;\n")
    text.append("static const bn_ref bn_refs[] = {\n" + "".join(rows) + "};\n")


# name, module, x shape
POOL_CASES = [
    ("max_k3s2p1", nn.MaxPool2d(3, stride=2, padding=1), (2, 3, 7, 6)),
    ("max_k2_default_stride", nn.MaxPool2d(2), (1, 2, 5, 6)),
    ("max_k2x3s1", nn.MaxPool2d((2, 3), stride=1), (2, 5, 4)),
    ("avg_k3s2p1", nn.AvgPool2d(3, stride=2, padding=1), (2, 3, 7, 6)),
    ("avg_k3s2p1_nopad", nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
     (2, 3, 7, 6)),
    ("avg_k2", nn.AvgPool2d(2), (1, 2, 5, 4)),
    ("adaptive_3x2", nn.AdaptiveAvgPool2d((3, 2)), (2, 2, 5, 7)),
]


def pool_cases(text):
    rows = []
    for name, m, xs in POOL_CASES:
        x = torch.randn(xs, dtype=torch.float64).requires_grad_()
        y = m(x)
        g = torch.randn(y.shape, dtype=torch.float64)
        (y * g).sum().backward()
        p = "pool_" + name
        for k, t in (("x", x), ("g", g), ("y", y), ("dx", x.grad)):
            text.append(carr("%s_%s" % (p, k), flat(t)))
        rows.append('    {"%s", %d, %s, %d, %s, %s_x, %s_g, %s_y, %s_dx},\n' % (
            name, len(xs), shape4(xs), y.dim(), shape4(y.shape), p, p, p, p))
    text.append("typedef struct pool_ref {\n    const char *name;\n    int ndim;\n"
                "    int64_t x_shape[4];\n    int y_ndim;\n    int64_t y_shape[4];\n"
                "    const double *x, *g, *y, *dx;\n} pool_ref;\n")
    text.append("static const pool_ref pool_refs[] = {\n" + "".join(rows) + "};\n")


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3), nn.BatchNorm2d(6), nn.ReLU(), nn.AvgPool2d(2, stride=1),
        nn.Flatten(), nn.Linear(24, 3))


def state_rows(sd, prefix):
    rows = []
    for i, (k, v) in enumerate(sd.items()):
        rows.append('    {"%s", %d, %s, %s_%d},\n' % (k, v.dim(), shape4(v.shape), prefix, i))
    return rows


def cnn_case(text):
    N = 4
    model = make_cnn().double()
    with torch.no_grad():
        for bn in (model[1], model[5]):
            bn.weight.copy_(1 + 0.3 * torch.randn(bn.weight.shape, dtype=torch.float64))
            bn.bias.copy_(0.2 * torch.randn(bn.bias.shape, dtype=torch.float64))
    x64 = torch.randn(N, 1, 10, 10, dtype=torch.float64)
    labels = torch.tensor([0, 2, 1, 2])
    state0 = {k: v.clone() for k, v in model.state_dict().items()}
    text.append(carr("cnn_x", flat(x64)))
    text.append("static const int64_t cnn_labels[%d] = {%s};\n" % (
        N, ",".join(str(int(v)) for v in labels)))
    for i, (k, v) in enumerate(state0.items()):
        text.append(carr("cnn_state0_%d" % i, flat(v)))
    text.append("typedef struct cnn_tensor {\n    const char *name;\n    int ndim;\n"
                "    int64_t shape[4];\n    const double *v;\n} cnn_tensor;\n")
    text.append("static const cnn_tensor cnn_state0[] = {\n" +
                "".join(state_rows(state0, "cnn_state0")) + "};\n")
    pnames = [k for k, _ in model.named_parameters()]
    text.append("static const char *const cnn_param_names[] = {%s};\n" % ", ".join(
        '"%s"' % k for k in pnames))
    for dt, tag, fmt in ((torch.float64, "f64", "%.17g"), (torch.float32, "f32", "%.9g")):
        m = make_cnn().to(dt)
        m.load_state_dict({k: v.to(dt) if v.is_floating_point() else v
                           for k, v in state0.items()})
        x = x64.to(dt)
        for mode in ("train", "eval"):
            m.train(mode == "train")
            m.zero_grad()
            logits = m(x)
            F.cross_entropy(logits, labels).backward()
            p = "cnn_%s_%s" % (tag, mode)
            text.append(carr(p + "_logits", flat(logits), fmt))
            grads = []
            for _, prm in m.named_parameters():
                grads += flat(prm.grad)
            text.append(carr(p + "_grads", grads, fmt))  # in cnn_param_names' order
            if mode == "train":
                sd = m.state_dict()
                for i, (k, v) in enumerate(sd.items()):
                    text.append(carr("cnn_%s_state1_%d" % (tag, i), flat(v), fmt))
                text.append("static const cnn_tensor cnn_%s_state1[] = {\n" % tag +
                            "".join(state_rows(sd, "cnn_%s_state1" % tag)) + "};\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "cnn_values.h")
    text = ["// Generated by tests/reference/cnn_values.py (torch %s); do not edit.\n"
            % torch.__version__]
    bn_cases(text)
    pool_cases(text)
    cnn_case(text)
    with open(out, "w") as f:
        f.write("".join(text))
    print(out)


if __name__ == "__main__":
    main()
