# Writes random_programs.txt: random programs over the op vocabulary, run by PyTorch 1.13 in
# f64 and f32, with their inputs, outputs and input gradients; tests/test_parity_programs.c
# replays them (make test never runs this script). Deterministic for a given seed:
#     /usr/bin/python3 tests/reference/gen_random_programs.py [OUT] [COUNT] [SEED]
# (defaults tests/reference/random_programs.txt, 400, 11). When an op is then used by fewer
# than 3 programs, programs that use one are added. Then COUNT / 8 programs over the CNN ops
# (convolutions, pooling, batch norm, dropout2d, upsampling, unflatten) from a second stream
# (SEED + 1), topped up the same way: the first programs do not depend on them.
#
# A program: 1-3 random float leaves (rank 0-4; some seen through a transpose, permute, slice
# or expand view), then 2-6 random draws from the new ops (each draw may emit a few ops: an
# integer or bool result feeds a where/gather/index_select/masked_select/mul, a zero-gradient
# op is added back to its input), ending in a float output `out`. Its gradient is that of
# sum(out * w) for a stored random w, taken w.r.t. every leaf that requires grad.
# Inputs avoid ties and kinks (distinct values before sort/topk/max/min, clamp bounds and
# comparison operands 1e-3 away from the values, |x| > 1e-3 before sign/leaky_relu/elu/abs-
# like norms) and stay in domains (log1p > -0.8, reciprocal |x| > 0.2); a program whose f32
# and f64 runs disagree on an integer result or differ by more than 2e-6 (relative to
# 1 + |x|) on a float, or whose values exceed 1e4, is drawn again.
#
# A CNN program: a 4-D leaf, 1-3 draws from the CNN ops (each maybe with fresh weight leaves),
# then maybe one older draw. batch_norm has three outputs: y and the updated copies of its
# running stats, which the draw folds into the output so they are checked too.
#
# Not drawn: multinomial, randint, randperm and bernoulli (tinytorch's xoshiro stream is not
# PyTorch's), nor dropout2d with p > 0 when training (for the same reason); topk with
# sorted=False (PyTorch's CPU order is unspecified, tinytorch sorts); scatter with duplicate
# targets (the winner is unspecified in PyTorch, see autograd.h).
#
# File format (text, one record a line, '#' lines are comments):
#   program N                      starts program N (0, 1, ...)
#   leaf KIND NDIM SHAPE... : V... a new register: KIND g (float, requires grad), c (float
#                                  constant), i (int64), j (int32), b (bool); values row-major
#   op NAME NOUT NIN REG... NINT INT... NFLT FLT...
#                                  the outputs get the next NOUT registers
#   w REG NDIM SHAPE... : V...     out = register REG (float); w: the weight of sum(out * w)
#   int REG NDIM SHAPE... : V...   an integer/bool register's exact value (the same in f32, f64)
#   out f64|f32 NDIM SHAPE... : V...
#   grad f64|f32 REG : V...        the gradient of a g leaf (0 where it does not reach out)
#   end
#   count N                        the number of programs (last line)
# Registers count from 0 in order of creation. Floats are C99 hex floats ('%a', exact; inf and
# -inf as such); leaf and w values are f32-representable, so both runs use the same inputs.
import math
import random
import sys

import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings('ignore', message='reduction: .mean. divides')  # kl_div's mean


class Reject(Exception):
    pass


def rdims(x, ints):  # ints = keepdim, dims... (none: all dims)
    return bool(ints[0]), (list(ints[1:]) if len(ints) > 1 else list(range(x.dim())))


def sl(x, dim, start, end, step):
    idx = [slice(None)] * x.dim()
    idx[dim] = slice(start, end, step)
    return x[tuple(idx)]


def prod_op(x, k):
    if len(k) == 1:  # all dims
        return torch.prod(x)
    return torch.prod(x, k[1], keepdim=bool(k[0]))


def nll(ins, k, f):
    w = ins[2] if len(ins) > 2 else None
    return F.nll_loss(ins[0], ins[1], weight=w, ignore_index=k[0], reduction=RED[k[1]])


def ce(ins, k, f):
    w = ins[2] if len(ins) > 2 else None
    return F.cross_entropy(ins[0], ins[1], weight=w, ignore_index=k[0], reduction=RED[k[1]],
                           label_smoothing=f[0])


RED = ['none', 'mean', 'sum', 'batchmean']
CMP = {'eq': torch.eq, 'ne': torch.ne, 'lt': torch.lt, 'le': torch.le, 'gt': torch.gt,
       'ge': torch.ge}
FDT = [torch.float64]  # the float dtype of the run

# name -> f(inputs, ints, floats) -> tensor or tuple; the C suite has the same table.
OPS = {
    # views and glue (older ops)
    'transpose': lambda i, k, f: i[0].transpose(k[0], k[1]),
    'permute': lambda i, k, f: i[0].permute(*k),
    'slice': lambda i, k, f: sl(i[0], *k),
    'expand': lambda i, k, f: i[0].expand(*k),
    'unsqueeze': lambda i, k, f: i[0].unsqueeze(k[0]),
    'reshape': lambda i, k, f: i[0].reshape(*k),
    'add': lambda i, k, f: i[0] + i[1],
    'mul': lambda i, k, f: i[0] * i[1],
    'to_float': lambda i, k, f: i[0].to(FDT[0]),
    'sigmoid': lambda i, k, f: torch.sigmoid(i[0]),
    'log_softmax': lambda i, k, f: F.log_softmax(i[0], k[0]),
    # comparison and selection
    'logical_and': lambda i, k, f: torch.logical_and(i[0], i[1]),
    'logical_or': lambda i, k, f: torch.logical_or(i[0], i[1]),
    'logical_xor': lambda i, k, f: torch.logical_xor(i[0], i[1]),
    'logical_not': lambda i, k, f: torch.logical_not(i[0]),
    'where': lambda i, k, f: torch.where(i[0], i[1], i[2]),
    # .contiguous(): PyTorch 1.13's masked_select backward misplaces the gradient of some
    # transposed inputs (x = randn(2, 3).t(): it differs from that of x[mask]); tinytorch's is
    # the correct one, so the reference goes through a contiguous copy.
    'masked_select': lambda i, k, f: torch.masked_select(i[0].contiguous(), i[1]),
    'nonzero': lambda i, k, f: torch.nonzero(i[0]),
    # math
    'sin': lambda i, k, f: torch.sin(i[0]),
    'erf': lambda i, k, f: torch.erf(i[0]),
    'cos': lambda i, k, f: torch.cos(i[0]),
    'log1p': lambda i, k, f: torch.log1p(i[0]),
    'expm1': lambda i, k, f: torch.expm1(i[0]),
    'reciprocal': lambda i, k, f: torch.reciprocal(i[0]),
    'sign': lambda i, k, f: torch.sign(i[0]),
    'floor': lambda i, k, f: torch.floor(i[0]),
    'ceil': lambda i, k, f: torch.ceil(i[0]),
    'round': lambda i, k, f: torch.round(i[0]),
    'leaky_relu': lambda i, k, f: F.leaky_relu(i[0], f[0]),
    'elu': lambda i, k, f: F.elu(i[0], f[0]),
    'clamp': lambda i, k, f: torch.clamp(i[0], f[0], f[1]),
    'clip': lambda i, k, f: torch.clip(i[0], f[0], f[1]),
    'softplus': lambda i, k, f: F.softplus(i[0], f[0], f[1]),
    'logsumexp': lambda i, k, f: torch.logsumexp(i[0], rdims(i[0], k)[1], rdims(i[0], k)[0]),
    'std': lambda i, k, f: torch.std(i[0], rdims(i[0], k[1:])[1], unbiased=bool(k[0]),
                                     keepdim=rdims(i[0], k[1:])[0]),
    'vector_norm': lambda i, k, f: torch.linalg.vector_norm(i[0], f[0], rdims(i[0], k)[1],
                                                            rdims(i[0], k)[0]),
    # creation and layout
    'full': lambda i, k, f: torch.full(k, f[0], dtype=FDT[0]),
    'eye': lambda i, k, f: torch.eye(k[0], k[1], dtype=FDT[0]),
    'linspace': lambda i, k, f: torch.linspace(f[0], f[1], k[0], dtype=FDT[0]),
    'one_hot': lambda i, k, f: F.one_hot(i[0], k[0]),
    'tril': lambda i, k, f: torch.tril(i[0], k[0]),
    'triu': lambda i, k, f: torch.triu(i[0], k[0]),
    'repeat': lambda i, k, f: i[0].repeat(*k),
    'tile': lambda i, k, f: torch.tile(i[0], tuple(k)),
    'flip': lambda i, k, f: torch.flip(i[0], k),
    'roll': lambda i, k, f: torch.roll(i[0], k[0], k[1]),
    'roll_dims': lambda i, k, f: torch.roll(i[0], tuple(k[1:1 + k[0]]), tuple(k[1 + k[0]:])),
    'pad': lambda i, k, f: F.pad(i[0], k[1:], ['constant', 'reflect'][k[0]],
                                 f[0] if k[0] == 0 else None),
    'split': lambda i, k, f: torch.split(i[0], k[0], k[1]),
    'split_sizes': lambda i, k, f: torch.split(i[0], list(k[1:]), k[0]),
    'chunk': lambda i, k, f: torch.chunk(i[0], k[0], k[1]),
    'unbind': lambda i, k, f: torch.unbind(i[0], k[0]),
    'movedim': lambda i, k, f: torch.movedim(i[0], k[0], k[1]),
    'diagonal': lambda i, k, f: torch.diagonal(i[0], k[0], k[1], k[2]),
    # indexing, sorting, scans, reductions
    'gather': lambda i, k, f: torch.gather(i[0], k[0], i[1]),
    'scatter': lambda i, k, f: torch.scatter(i[0], k[0], i[1], i[2]),
    'scatter_add': lambda i, k, f: torch.scatter_add(i[0], k[0], i[1], i[2]),
    'index_select': lambda i, k, f: torch.index_select(i[0], k[0], i[1]),
    'index_add': lambda i, k, f: torch.index_add(i[0], k[0], i[1], i[2], alpha=f[0]),
    'sort': lambda i, k, f: tuple(torch.sort(i[0], dim=k[0], descending=bool(k[1]),
                                             stable=True)),
    'argsort': lambda i, k, f: torch.sort(i[0], dim=k[0], descending=bool(k[1]),
                                          stable=True)[1],
    'topk': lambda i, k, f: tuple(torch.topk(i[0], k[0], k[1], bool(k[2]), True)),
    'cumsum': lambda i, k, f: torch.cumsum(i[0], k[0]),
    'cumprod': lambda i, k, f: torch.cumprod(i[0], k[0]),
    'prod': lambda i, k, f: prod_op(i[0], k),
    'max': lambda i, k, f: torch.amax(i[0], rdims(i[0], k)[1], rdims(i[0], k)[0]),
    'min': lambda i, k, f: torch.amin(i[0], rdims(i[0], k)[1], rdims(i[0], k)[0]),
    'argmax': lambda i, k, f: torch.argmax(i[0], k[0], bool(k[1])),
    'argmin': lambda i, k, f: torch.argmin(i[0], k[0], bool(k[1])),
    'max_dim': lambda i, k, f: tuple(torch.max(i[0], k[0], bool(k[1]))),
    'min_dim': lambda i, k, f: tuple(torch.min(i[0], k[0], bool(k[1]))),
    # losses
    'l1_loss': lambda i, k, f: F.l1_loss(i[0], i[1], reduction=RED[k[0]]),
    'mse_loss': lambda i, k, f: F.mse_loss(i[0], i[1], reduction=RED[k[0]]),
    'smooth_l1_loss': lambda i, k, f: F.smooth_l1_loss(i[0], i[1], reduction=RED[k[0]],
                                                       beta=f[0]),
    'huber_loss': lambda i, k, f: F.huber_loss(i[0], i[1], reduction=RED[k[0]], delta=f[0]),
    'kl_div': lambda i, k, f: F.kl_div(i[0], i[1], reduction=RED[k[0]], log_target=bool(k[1])),
    'binary_cross_entropy': lambda i, k, f: F.binary_cross_entropy(
        i[0], i[1], weight=i[2] if len(i) > 2 else None, reduction=RED[k[0]]),
    'bce_with_logits': lambda i, k, f: F.binary_cross_entropy_with_logits(
        i[0], i[1], weight=i[2] if len(i) > 2 else None, reduction=RED[k[0]]),
    'nll_loss': nll,
    'cross_entropy': ce,
}
for _n, _f in CMP.items():
    OPS[_n] = (lambda fn: lambda i, k, f: fn(i[0], i[1]))(_f)
    OPS[_n + '_scalar'] = (lambda fn: lambda i, k, f: fn(i[0], f[0]))(_f)
BASE_OPS = set(OPS)  # the vocabulary of the first programs (their draws and coverage rule)


def batch_norm(i, k, f):
    """(y, running_mean, running_var after the update): the stats are copies, updated."""
    rm, rv = i[1].detach().clone(), i[2].detach().clone()
    w = i[3] if len(i) > 3 else None
    b = i[4] if len(i) > 4 else None
    return F.batch_norm(i[0], rm, rv, w, b, bool(k[0]), f[0], f[1]), rm, rv


def upsample(i, k, f):
    if k:
        return F.interpolate(i[0], size=tuple(k), mode='nearest')
    return F.interpolate(i[0], scale_factor=tuple(f), mode='nearest')


# convolutions, pooling, batch norm and the rest of the CNN vocabulary
OPS.update({
    # ints: stride (2), padding (2), dilation (2), groups
    'conv2d': lambda i, k, f: F.conv2d(i[0], i[1], i[2] if len(i) > 2 else None, k[0:2],
                                       k[2:4], k[4:6], k[6]),
    # ints: stride, padding, dilation, groups
    'conv1d': lambda i, k, f: F.conv1d(i[0], i[1], i[2] if len(i) > 2 else None, k[0], k[1],
                                       k[2], k[3]),
    # ints: stride (2), padding (2), output_padding (2), groups, dilation (2)
    'conv_transpose2d': lambda i, k, f: F.conv_transpose2d(
        i[0], i[1], i[2] if len(i) > 2 else None, k[0:2], k[2:4], k[4:6], k[6], k[7:9]),
    # ints: kernel (2), stride (2), padding (2); outputs: values, indices
    'max_pool2d': lambda i, k, f: tuple(F.max_pool2d(i[0], k[0:2], k[2:4], k[4:6],
                                                     return_indices=True)),
    # ints: kernel (2), stride (2), padding (2), count_include_pad
    'avg_pool2d': lambda i, k, f: F.avg_pool2d(i[0], k[0:2], k[2:4], k[4:6],
                                               count_include_pad=bool(k[6])),
    'adaptive_avg_pool2d': lambda i, k, f: F.adaptive_avg_pool2d(i[0], tuple(k)),
    # inputs: x, running_mean, running_var[, weight, bias]; ints: training; floats: momentum,
    # eps; outputs: y and the updated running stats
    'batch_norm': batch_norm,
    # ints: training; floats: p. Only the identity cases (p = 0, or not training): the masks
    # of tinytorch's rng cannot match PyTorch's
    'dropout2d': lambda i, k, f: F.dropout2d(i[0], f[0], bool(k[0])),
    # ints: out_h, out_w; or none and floats: the scale factors
    'upsample_nearest2d': upsample,
    # ints: dim, sizes...
    'unflatten': lambda i, k, f: torch.unflatten(i[0], k[0], tuple(k[1:])),
})
CNN_OPS = [n for n in OPS if n not in BASE_OPS]

# The ops a draw is made of; each new differentiable op must appear in >= 3 programs.
NEW_OPS = [n for n in BASE_OPS if n not in ('transpose', 'permute', 'slice', 'expand', 'unsqueeze',
                                        'reshape', 'add', 'mul', 'to_float', 'sigmoid',
                                        'log_softmax', 'max', 'argmax')]


def f32r(v):
    """The nearest f32 value, as a Python float."""
    return float(torch.tensor(v, dtype=torch.float32))


def isfloat(t):
    return t.dtype.is_floating_point


class Prog:
    def __init__(self, rnd, gen):
        self.rnd, self.gen = rnd, gen
        self.lines = []  # ('leaf', kind, tensor) / ('op', name, nout, ins, ints, flts)
        self.regs = []   # f64 values at generation
        self.dep = []    # register depends on a g leaf
        self.nnew = 0

    def leaf(self, kind, t):
        if kind in 'gc':
            t = t.to(torch.float32).to(torch.float64)
        self.lines.append(('leaf', kind, t))
        self.regs.append(t)
        self.dep.append(kind == 'g')
        return len(self.regs) - 1

    def randn(self, shape, kind='g', scale=1.0):
        return self.leaf(kind, torch.randn(shape, generator=self.gen, dtype=torch.float64) * scale)

    def uniform(self, shape, lo, hi, kind='c'):
        u = torch.rand(shape, generator=self.gen, dtype=torch.float64)
        return self.leaf(kind, lo + (hi - lo) * u)

    def ints(self, shape, lo, hi, kind='i'):
        if hi <= lo:
            raise Reject('empty range')
        return self.leaf(kind, torch.randint(lo, hi, shape, generator=self.gen,
                                             dtype=torch.int32 if kind == 'j' else torch.int64))

    def op(self, name, ins, ints=(), flts=()):
        ints, flts = [int(v) for v in ints], [f32r(v) for v in flts]
        try:
            with torch.no_grad():
                r = OPS[name]([self.regs[i] for i in ins], ints, flts)
        except (RuntimeError, IndexError, ValueError, TypeError) as e:
            raise Reject(str(e))
        outs = list(r) if isinstance(r, (tuple, list)) else [r]
        if len(outs) > 16:  # the C suite has room for 64
            raise Reject('too many pieces')
        for o in outs:
            if o.numel() > 200:
                raise Reject('too big')
            if isfloat(o) and o.numel() and not torch.isfinite(o).all():
                raise Reject('not finite')
            if isfloat(o) and o.numel() and o.abs().max() > 1e4:
                raise Reject('too large')
        self.lines.append(('op', name, len(outs), list(ins), ints, flts))
        d = any(self.dep[i] for i in ins)
        first = len(self.regs)
        for o in outs:
            self.regs.append(o)
            self.dep.append(d and isfloat(o))
        if name in NEW_OPS:
            self.nnew += 1
        return list(range(first, first + len(outs)))

    def op1(self, name, ins, ints=(), flts=()):
        return self.op(name, ins, ints, flts)[0]

    def cur(self):
        """The newest float register that depends on a g leaf."""
        for r in range(len(self.regs) - 1, -1, -1):
            if self.dep[r] and isfloat(self.regs[r]):
                return r
        raise Reject('no current')


# ---- checks on values (tie and kink avoidance) ----

def away(t, points, gap=1e-3):
    t = t.reshape(-1)
    for p in points:
        if t.numel() and ((t - p).abs() < gap).any():
            raise Reject('near %r' % p)


def distinct(t, dims, gap=1e-3):
    """No two values closer than gap within a line over dims."""
    if t.numel() == 0:
        return
    if t.dim() == 0:
        return
    rest = [d for d in range(t.dim()) if d not in dims]
    u = t.permute(*(rest + list(dims))).reshape(-1, int(math.prod(t.shape[d] for d in dims)))
    s = u.sort(dim=1).values
    if s.shape[1] > 1 and (s[:, 1:] - s[:, :-1]).min() < gap:
        raise Reject('ties')


def not_int(t, half=False, gap=1e-3):
    f = t - torch.floor(t)
    if (f < gap).any() or (f > 1 - gap).any():
        raise Reject('near integer')
    if half and ((f - 0.5).abs() < gap).any():
        raise Reject('near half')


# ---- shapes ----

def rshape(rnd, rank=None, maxn=48):
    while True:
        r = rnd.randint(0, 4) if rank is None else rank
        s = [rnd.randint(1, 4) for _ in range(r)]
        if math.prod(s) <= maxn:
            return s


def bshape(rnd, s):
    """A shape that broadcasts with s (dims set to 1, leading dims dropped)."""
    s = list(s)
    if s and rnd.random() < 0.3:
        s = s[rnd.randint(1, len(s)):]
    return [1 if rnd.random() < 0.3 else d for d in s]


def view_leaf(p, shape, kind='g'):
    """A leaf of the given shape, often seen through a view (so not contiguous)."""
    rnd = p.rnd
    v = rnd.random()
    n = len(shape)
    if n >= 2 and v < 0.2:
        a, b = rnd.sample(range(n), 2)
        s = list(shape)
        s[a], s[b] = s[b], s[a]
        return p.op1('transpose', [p.randn(s, kind)], [a, b])
    if n >= 3 and v < 0.3:
        perm = list(range(n))
        rnd.shuffle(perm)
        inv = [perm.index(i) for i in range(n)]
        return p.op1('permute', [p.randn([shape[i] for i in inv], kind)], perm)
    if n >= 1 and v < 0.45:
        d = rnd.randrange(n)
        s = list(shape)
        step = rnd.randint(1, 2)
        start = rnd.randint(0, 1)
        s[d] = start + step * (shape[d] - 1) + 1 + rnd.randint(0, 1)
        return p.op1('slice', [p.randn(s, kind)], [d, start, start + step * shape[d], step])
    if n >= 1 and v < 0.6:
        d = rnd.randrange(n)
        s = list(shape)
        s[d] = 1
        return p.op1('expand', [p.randn(s, kind)], shape)
    if n >= 1 and shape[0] == 1 and v < 0.7:
        return p.op1('unsqueeze', [p.randn(shape[1:], kind)], [0])
    return p.randn(shape, kind)


def negdim(p, x, d):
    """d, or the same dim counted from the end."""
    return d - p.regs[x].dim() if p.rnd.random() < 0.3 else d


def rdim(p, x):
    if p.regs[x].dim() == 0:
        raise Reject('0-dim')
    return p.rnd.randrange(p.regs[x].dim())


def reduce_args(p, x, single=False):
    t = p.regs[x]
    keep = p.rnd.randint(0, 1)
    if t.dim() == 0 or p.rnd.random() < 0.25:
        return keep, list(range(t.dim())), []
    k = 1 if single else p.rnd.randint(1, t.dim())
    dims = sorted(p.rnd.sample(range(t.dim()), k))
    neg = [d - t.dim() if p.rnd.random() < 0.3 else d for d in dims]
    return keep, dims, neg


# ---- draws: each emits one or a few ops on the current register ----

def d_unary(p):
    x = p.cur()
    t = p.regs[x]
    name = p.rnd.choice(['sin', 'cos', 'log1p', 'expm1', 'reciprocal', 'erf'])
    if name == 'log1p' and t.numel() and t.min() < -0.8:
        x = p.op1('sigmoid', [x])
    if name == 'reciprocal':
        away(t, [0], 0.2)
    if name == 'expm1' and t.numel() and t.abs().max() > 4:
        raise Reject('expm1 range')
    return p.op1(name, [x])


def d_zero_grad(p):  # sign floor ceil round: values used, gradient 0; added back to x
    x = p.cur()
    name = p.rnd.choice(['sign', 'floor', 'ceil', 'round'])
    s = 1.0 if name == 'sign' else p.rnd.choice([1.5, 2.5, 4.0])
    y = x if name == 'sign' else p.op1('mul', [x, p.leaf('c', torch.tensor(s))])
    t = p.regs[y]
    if name == 'sign':
        away(t, [0])
    else:
        not_int(t, half=(name == 'round'))
    z = p.op1(name, [y])
    return p.op1(p.rnd.choice(['add', 'mul']), [x, z])


def d_act(p):
    x = p.cur()
    away(p.regs[x], [0])
    name = p.rnd.choice(['leaky_relu', 'elu'])
    return p.op1(name, [x], [], [p.rnd.choice([0.01, 0.2, 0.5, 1.0, 1.5])])


def d_clamp(p):
    x = p.cur()
    t = p.regs[x].reshape(-1)
    if t.numel() == 0:
        raise Reject('empty')
    s = sorted(t.tolist())
    lo, hi = s[0] - 1.0, s[-1] + 1.0
    if len(s) > 1 and p.rnd.random() < 0.8:
        i = p.rnd.randrange(len(s) - 1)
        lo = (s[i] + s[i + 1]) / 2
        j = p.rnd.randrange(i + 1, len(s))
        hi = (s[j] + s[j + 1]) / 2 if j + 1 < len(s) else s[-1] + 0.5
    if p.rnd.random() < 0.2:
        lo = -math.inf
    elif p.rnd.random() < 0.2:
        hi = math.inf
    elif p.rnd.random() < 0.1:  # lo > hi: every element is hi, no gradient passes
        lo, hi = hi + 0.5, hi
    lo, hi = f32r(lo), f32r(hi)
    away(t, [lo, hi])
    return p.op1(p.rnd.choice(['clamp', 'clip']), [x], [], [lo, hi])


def d_softplus(p):
    x = p.cur()
    beta, thr = p.rnd.choice([1.0, 0.5, 2.0]), p.rnd.choice([20.0, 1.0, 2.0])
    away(p.regs[x] * beta, [thr])
    return p.op1('softplus', [x], [], [beta, thr])


def d_reduce(p):
    x = p.cur()
    t = p.regs[x]
    name = p.rnd.choice(['logsumexp', 'std', 'vector_norm', 'prod', 'min', 'max'])
    keep, dims, neg = reduce_args(p, x, single=(name == 'prod'))
    if t.numel() == 0:
        raise Reject('empty')
    if name == 'std':
        corr = p.rnd.randint(0, 1)
        n = math.prod(t.shape[d] for d in dims)
        if n <= corr:
            raise Reject('std count')
        y = p.op1('std', [x], [corr, keep] + neg)
        if (p.regs[y] < 1e-3).any():
            raise Reject('std 0')
        return y
    if name == 'vector_norm':
        pn = p.rnd.choice([1.0, 2.0, math.inf])
        if pn != 2:
            away(t, [0])
        if pn == math.inf:
            distinct(t.abs(), dims)
        y = p.op1('vector_norm', [x], [keep] + neg, [pn])
        if (p.regs[y] < 1e-3).any():
            raise Reject('norm 0')
        return y
    if name in ('min', 'max'):
        distinct(t, dims)
    if name == 'prod':
        if dims == list(range(t.dim())):
            return p.op1('prod', [x], [0])
        return p.op1('prod', [x], [keep] + neg)
    return p.op1(name, [x], [keep] + neg)


def d_scan(p):
    x = p.cur()
    d = negdim(p, x, rdim(p, x))
    return p.op1(p.rnd.choice(['cumsum', 'cumprod']), [x], [d])


def cmp_operand(p, x):
    """A second float operand broadcasting with x: a constant or a g leaf."""
    return view_leaf(p, bshape(p.rnd, p.regs[x].shape), p.rnd.choice('gc'))


def d_compare(p):  # a comparison (maybe combined by logical ops) feeding where / masked_select
    x = p.cur()
    rnd = p.rnd
    name = rnd.choice(list(CMP))

    def one(name):
        if name in ('eq', 'ne'):  # on rounded values, so equality happens
            y = p.op1('round', [x])
            not_int(p.regs[x], half=True)
            if rnd.random() < 0.5:
                b = p.leaf('c', torch.randint(-1, 2, bshape(rnd, p.regs[x].shape),
                                              generator=p.gen).double())
            else:
                b = p.ints(bshape(rnd, p.regs[x].shape), -1, 2, rnd.choice('ij'))
            if rnd.random() < 0.5:
                return p.op1(name + '_scalar', [y], [], [float(rnd.randint(-1, 1))])
            return p.op1(name, [y, b])
        if rnd.random() < 0.4:
            s = f32r(rnd.uniform(-1, 1))
            away(p.regs[x], [s])
            return p.op1(name + '_scalar', [x], [], [s])
        b = cmp_operand(p, x)
        u, v = torch.broadcast_tensors(p.regs[x], p.regs[b])
        away(u - v, [0])
        return p.op1(name, [x, b])

    c = one(name)
    v = rnd.random()
    if v < 0.15:
        c = p.op1('logical_not', [c])
    elif v < 0.4:
        c = p.op1(rnd.choice(['logical_and', 'logical_or', 'logical_xor']),
                  [c, one(rnd.choice(list(CMP)))])
    v = rnd.random()
    if v < 0.55:
        b = cmp_operand(p, x)
        ab = [x, b] if rnd.random() < 0.5 else [b, x]
        return p.op1('where', [c] + ab)
    if v < 0.8:
        return p.op1('masked_select', [x, c])
    return p.op1('mul', [x, p.op1('to_float', [c])])


def d_nonzero(p):  # indices of a mask select rows of x
    x = p.cur()
    d = rdim(p, x)
    n = p.regs[x].shape[d]
    if p.rnd.random() < 0.5:
        v = p.uniform([n], -1, 1)
        m = p.op1('gt_scalar', [v], [], [0.0])
        away(p.regs[v], [0])
        nz = p.op1('nonzero', [m])
        idx = p.op1('reshape', [nz], [-1])
        if p.regs[idx].numel() == 0:
            raise Reject('none')
        return p.op1('index_select', [x, idx], [d])
    m = p.op1('gt_scalar', [x], [], [0.0])  # nonzero of a whole mask; its rows index x's dims
    away(p.regs[x], [0])
    nz = p.op1('nonzero', [m])
    if p.regs[nz].shape[0] == 0:
        raise Reject('none')
    col = p.op1('reshape', [p.op1('slice', [nz], [1, d, d + 1, 1])], [-1])
    return p.op1('index_select', [x, col], [d])


def d_gather(p):
    x = p.cur()
    t = p.regs[x]
    d = rdim(p, x)
    v = p.rnd.random()
    if v < 0.35:  # the permutation of a sort of another tensor
        b = p.randn(list(t.shape), p.rnd.choice('gc'))
        distinct(p.regs[b], [d])
        idx = p.op1('argsort', [b], [d, p.rnd.randint(0, 1)])
    elif v < 0.5:
        b = p.randn(list(t.shape), 'c')
        distinct(p.regs[b], [d])
        k = p.rnd.randint(1, t.shape[d])
        idx = p.op('topk', [b], [k, d, p.rnd.randint(0, 1)])[1]
    else:
        s = [p.rnd.randint(1, n) if i != d else p.rnd.randint(1, 4) for i, n in enumerate(t.shape)]
        idx = p.ints(s, 0, t.shape[d])
    return p.op1('gather', [x, idx], [negdim(p, x, d)])


def d_scatter(p):
    x = p.cur()
    t = p.regs[x]
    d = rdim(p, x)
    name = p.rnd.choice(['scatter', 'scatter_add'])
    s = [p.rnd.randint(1, n) for n in t.shape]
    if name == 'scatter':  # distinct targets in each line
        lines = torch.stack([torch.randperm(t.shape[d], generator=p.gen)[:s[d]]
                             for _ in range(math.prod(s) // s[d])])
        perm = [i for i in range(len(s)) if i != d] + [d]
        inv = [perm.index(i) for i in range(len(s))]
        idx = p.leaf('i', lines.reshape([s[i] for i in perm]).permute(*inv).contiguous())
    else:
        s[d] = p.rnd.randint(1, 5)
        idx = p.ints(s, 0, t.shape[d])
    # src has index's shape: PyTorch 1.13's backward fails on a larger src ("invalid gradient")
    src = view_leaf(p, s, p.rnd.choice('gc'))
    return p.op1(name, [x, idx, src], [negdim(p, x, d)])


def d_index(p):
    x = p.cur()
    t = p.regs[x]
    d = rdim(p, x)
    k = p.rnd.randint(1, 4)
    v = p.rnd.random()
    if v < 0.3:  # argmax indices of another tensor
        b = p.randn([k, t.shape[d]], 'c')
        distinct(p.regs[b], [1])
        idx = p.op1(p.rnd.choice(['argmax', 'argmin']), [b], [1, 0])
    elif v < 0.4:  # a 0-dim index keeps the dim with size 1
        k = 1
        idx = p.ints([], 0, t.shape[d], p.rnd.choice('ij'))
    else:  # int64 or int32
        idx = p.ints([k], 0, t.shape[d], p.rnd.choice('iij'))
    d = negdim(p, x, d)
    if p.rnd.random() < 0.5:
        return p.op1('index_select', [x, idx], [d])
    s = list(t.shape)
    s[d] = k
    src = view_leaf(p, s, p.rnd.choice('gc'))
    return p.op1('index_add', [x, idx, src], [d], [p.rnd.choice([1.0, -0.5, 2.0])])


def d_sort(p):
    x = p.cur()
    t = p.regs[x]
    d = rdim(p, x)
    distinct(t, [d])
    v = p.rnd.random()
    if v < 0.4:
        vals, idx = p.op('sort', [x], [d - t.dim() if p.rnd.random() < 0.3 else d,
                                       p.rnd.randint(0, 1)])
    elif v < 0.7:
        k = p.rnd.randint(0, t.shape[d])
        vals, idx = p.op('topk', [x], [k, d, p.rnd.randint(0, 1)])
    else:
        idx = p.op1('argsort', [x], [d, p.rnd.randint(0, 1)])
        return p.op1('gather', [x, idx], [d])
    if p.rnd.random() < 0.5:  # the indices matter: they gather another tensor
        b = p.randn(list(p.regs[idx].shape), 'g')
        return p.op1('add', [vals, p.op1('gather', [b, idx], [d])])
    return vals


def d_minmax(p):
    x = p.cur()
    t = p.regs[x]
    d = rdim(p, x)
    distinct(t, [d])
    keep = p.rnd.randint(0, 1)
    if p.rnd.random() < 0.5:
        vals, idx = p.op(p.rnd.choice(['max_dim', 'min_dim']), [x], [negdim(p, x, d), keep])
        if not keep:
            return vals
        b = p.randn(list(t.shape), 'g')
        return p.op1('add', [vals, p.op1('gather', [b, idx], [d])])
    idx = p.op1(p.rnd.choice(['argmin', 'argmax']), [x], [negdim(p, x, d), 1])
    return p.op1('gather', [x, idx], [d])


def d_trilu(p):
    x = p.cur()
    if p.regs[x].dim() < 2:
        raise Reject('rank')
    return p.op1(p.rnd.choice(['tril', 'triu']), [x], [p.rnd.randint(-2, 2)])


def d_repeat(p):
    x = p.cur()
    n = p.regs[x].dim()
    if p.rnd.random() < 0.5:
        reps = [p.rnd.randint(1, 2) for _ in range(n + p.rnd.randint(0, 1))]
        if p.rnd.random() < 0.1:
            reps[0] = 0
        return p.op1('repeat', [x], reps)
    reps = [p.rnd.randint(1, 2) for _ in range(p.rnd.randint(1, n + 1))]
    return p.op1('tile', [x], reps)


def d_flip_roll(p):
    x = p.cur()
    n = p.regs[x].dim()
    if n == 0:
        raise Reject('0-dim')
    v = p.rnd.random()
    if v < 0.35:
        return p.op1('flip', [x], p.rnd.sample(range(n), p.rnd.randint(1, n)))
    if v < 0.7 or n < 2:
        return p.op1('roll', [x], [p.rnd.randint(-5, 5), p.rnd.randrange(-n, n)])
    dims = p.rnd.sample(range(n), 2)
    return p.op1('roll_dims', [x], [2, p.rnd.randint(-3, 3), p.rnd.randint(-3, 3)] + dims)


def d_pad(p):
    x = p.cur()
    t = p.regs[x]
    n = t.dim()
    if n == 0:
        raise Reject('0-dim')
    if p.rnd.random() < 0.5:
        k = p.rnd.randint(1, min(n, 2))
        pads = [p.rnd.randint(-1, 2) for _ in range(2 * k)]
        return p.op1('pad', [x], [0] + pads, [p.rnd.choice([0.0, 1.5, -0.25])])
    k = p.rnd.randint(1, 2)
    if n < k + 1:
        raise Reject('rank')
    pads = []
    for j in range(k):
        sz = t.shape[n - 1 - j]
        pads += [p.rnd.randint(0, sz - 1), p.rnd.randint(0, sz - 1)]
    return p.op1('pad', [x], [1] + pads, [0.0])


def d_split(p):
    x = p.cur()
    t = p.regs[x]
    d = rdim(p, x)
    n = t.shape[d]
    d = negdim(p, x, d)
    v = p.rnd.random()
    if v < 0.3:
        outs = p.op('split', [x], [p.rnd.randint(1, n), d])
    elif v < 0.5:
        cut = p.rnd.randint(0, n)
        outs = p.op('split_sizes', [x], [d, cut, n - cut])
    elif v < 0.75:
        outs = p.op('chunk', [x], [p.rnd.randint(1, 4), d])
    else:
        outs = p.op('unbind', [x], [d])
    a, b = p.rnd.choice(outs), p.rnd.choice(outs)
    if p.regs[a].shape == p.regs[b].shape and a != b:
        return p.op1('mul', [a, b])
    return a


def d_move(p):
    x = p.cur()
    n = p.regs[x].dim()
    if n < 2:
        raise Reject('rank')
    if p.rnd.random() < 0.5:
        return p.op1('movedim', [x], [p.rnd.randrange(-n, n), p.rnd.randrange(-n, n)])
    d1, d2 = p.rnd.sample(range(n), 2)
    return p.op1('diagonal', [x], [p.rnd.randint(-1, 1), negdim(p, x, d1), d2])


def d_create(p):
    x = p.cur()
    t = p.regs[x]
    v = p.rnd.random()
    if v < 0.3 and t.dim() >= 2:
        e = p.op1('eye', [], [t.shape[-2], t.shape[-1]])
        return p.op1(p.rnd.choice(['add', 'mul']), [x, e])
    if v < 0.5:
        s = bshape(p.rnd, t.shape)
        return p.op1('add', [x, p.op1('full', [], s, [p.rnd.choice([0.5, -2.0, 3.25])])])
    if v < 0.75 and t.dim() >= 1:
        lin = p.op1('linspace', [], [t.shape[-1]], [p.rnd.choice([-1.0, 0.0]),
                                                  p.rnd.choice([1.0, 2.5])])
        return p.op1('mul', [x, lin])
    if t.dim() < 1:
        raise Reject('rank')
    idx = p.ints(bshape(p.rnd, t.shape[:-1]), 0, t.shape[-1])
    oh = p.op1('one_hot', [idx], [t.shape[-1]])
    return p.op1('mul', [x, p.op1('to_float', [oh])])


def d_loss(p):
    x = p.cur()
    t = p.regs[x]
    rnd = p.rnd
    s = list(t.shape)
    red = rnd.randint(0, 2)
    if t.numel() == 0:
        raise Reject('empty')
    name = rnd.choice(['l1_loss', 'mse_loss', 'smooth_l1_loss', 'huber_loss', 'kl_div',
                       'binary_cross_entropy', 'bce_with_logits'] +
                      ['nll_loss', 'cross_entropy'] * 2)
    if name in ('l1_loss', 'mse_loss', 'smooth_l1_loss', 'huber_loss'):
        y = p.randn(s, 'c')
        z = (t - p.regs[y]).abs()
        away(z, [0])
        if name in ('l1_loss', 'mse_loss'):
            return p.op1(name, [x, y], [red])
        beta = rnd.choice([0.5, 1.0, 2.0])
        away(z, [beta])
        return p.op1(name, [x, y], [red], [beta])
    if name == 'kl_div':
        red = rnd.randint(0, 3)
        if red == 3 and t.dim() == 0:
            red = 1
        logt = rnd.randint(0, 1)
        y = p.randn(s, 'c') if logt else p.uniform(s, 0.05, 1.0)
        return p.op1('kl_div', [x, y], [red, logt])
    if name in ('binary_cross_entropy', 'bce_with_logits'):
        if name == 'binary_cross_entropy':
            x = p.op1('sigmoid', [x])
        ins = [x, p.uniform(s, 0, 1)]
        if rnd.random() < 0.4:
            ins.append(p.uniform(bshape(rnd, s), 0.5, 2))
        return p.op1(name, ins, [red])
    # nll_loss / cross_entropy: classes in dim 1 (dim 0 for a 1-D input)
    if t.dim() > 3:
        raise Reject('rank')
    if t.dim() == 0:
        x = p.op1('unsqueeze', [x], [0])
        t = p.regs[x]
    cd = 1 if t.dim() >= 2 else 0
    c = t.shape[cd]
    ts = [n for i, n in enumerate(t.shape) if i != cd]
    ignore = rnd.choice([-100, 0, 1])
    tg = torch.randint(0, c, ts, generator=p.gen)
    if tg.dim() > 0 and rnd.random() < 0.5:
        tg.view(-1)[0] = ignore
    if (tg == ignore).all() and red == 1:
        raise Reject('all ignored')
    ins = [x if name == 'cross_entropy' else p.op1('log_softmax', [x], [cd]), p.leaf('i', tg)]
    if rnd.random() < 0.4:
        ins.append(p.uniform([c], 0.5, 2))
    if name == 'nll_loss':
        return p.op1('nll_loss', ins, [ignore, red])
    return p.op1('cross_entropy', ins, [ignore, red], [rnd.choice([0.0, 0.0, 0.1, 0.3])])


DRAWS = [d_unary, d_zero_grad, d_act, d_clamp, d_softplus, d_reduce, d_scan, d_compare,
         d_nonzero, d_gather, d_scatter, d_index, d_sort, d_minmax, d_trilu, d_repeat,
         d_flip_roll, d_pad, d_split, d_move, d_create, d_loss]


# ---- CNN draws: x is a 4-D (N, C, H, W) register (3-D (N, C, L) for conv1d) ----

def image(p, maxn=96):
    """The current register as (N, C, H, W): a fresh leaf when it is not 4-D."""
    x = p.cur()
    if p.regs[x].dim() == 4 and p.regs[x].numel() <= maxn:
        return x
    rnd = p.rnd
    while True:
        s = [rnd.randint(1, 2), rnd.randint(1, 4), rnd.randint(2, 6), rnd.randint(2, 6)]
        if math.prod(s) <= maxn:
            break
    return view_leaf(p, s)


def d_conv2d(p):
    x = image(p)
    rnd = p.rnd
    n, c, h, w = p.regs[x].shape
    g = rnd.choice([g for g in (1, 2, 3) if c % g == 0])
    co = g * rnd.randint(1, 3)
    kh, kw = rnd.randint(1, 3), rnd.randint(1, 3)
    st = [rnd.randint(1, 2), rnd.randint(1, 2)]
    dl = [rnd.randint(1, 2), rnd.randint(1, 2)]
    pd = [rnd.randint(0, 1), rnd.randint(0, 2)]
    wt = view_leaf(p, [co, c // g, kh, kw])
    ins = [x, wt] + ([view_leaf(p, [co])] if rnd.random() < 0.7 else [])
    return p.op1('conv2d', ins, st + pd + dl + [g])


def d_conv1d(p):
    x = image(p)
    rnd = p.rnd
    n, c, h, w = p.regs[x].shape
    x = p.op1('reshape', [x], [n, c, h * w])  # (N, C, L)
    g = rnd.choice([g for g in (1, 2) if c % g == 0])
    co = g * rnd.randint(1, 3)
    wt = view_leaf(p, [co, c // g, rnd.randint(1, 3)])
    ins = [x, wt] + ([view_leaf(p, [co])] if rnd.random() < 0.7 else [])
    y = p.op1('conv1d', ins, [rnd.randint(1, 3), rnd.randint(0, 2), rnd.randint(1, 2), g])
    return p.op1('unflatten', [y], [2, 1, -1])  # back to 4-D


def d_conv_transpose2d(p):
    x = image(p, 48)
    rnd = p.rnd
    n, c, h, w = p.regs[x].shape
    g = rnd.choice([g for g in (1, 2) if c % g == 0])
    co = g * rnd.randint(1, 2)
    st = [rnd.randint(1, 2), rnd.randint(1, 3)]
    dl = [rnd.randint(1, 2), rnd.randint(1, 2)]
    op = [rnd.randrange(max(st[d], dl[d])) for d in range(2)]
    pd = [rnd.randint(0, 1), rnd.randint(0, 1)]
    wt = view_leaf(p, [c, co // g, rnd.randint(1, 3), rnd.randint(1, 3)])
    ins = [x, wt] + ([view_leaf(p, [co])] if rnd.random() < 0.7 else [])
    return p.op1('conv_transpose2d', ins, st + pd + op + [g] + dl)


def d_pool(p):
    x = image(p)
    rnd = p.rnd
    t = p.regs[x]
    h, w = t.shape[2], t.shape[3]
    name = rnd.choice(['max_pool2d', 'max_pool2d', 'avg_pool2d', 'adaptive_avg_pool2d'])
    if name == 'adaptive_avg_pool2d':
        return p.op1(name, [x], [rnd.randint(1, h + 1), rnd.randint(1, w + 1)])
    kern = [rnd.randint(1, min(3, h)), rnd.randint(1, min(3, w))]
    st = [rnd.randint(1, kern[0]), rnd.randint(1, kern[1])]
    pd = [rnd.randint(0, kern[0] // 2), rnd.randint(0, kern[1] // 2)]
    if name == 'avg_pool2d':
        return p.op1(name, [x], kern + st + pd + [rnd.randint(0, 1)])
    distinct(t, [2, 3])
    vals, idx = p.op(name, [x], kern + st + pd)
    if rnd.random() < 0.5:  # the indices matter: they gather another tensor's planes
        n, c = t.shape[0], t.shape[1]
        b = p.randn([n, c, h * w], 'g')
        flat = p.op1('reshape', [idx], [n, c, -1])
        got = p.op1('gather', [b, flat], [2])
        return p.op1('add', [vals, p.op1('reshape', [got], list(p.regs[vals].shape))])
    return vals


def d_batch_norm(p):
    x = image(p)
    rnd = p.rnd
    c = p.regs[x].shape[1]
    training = int(rnd.random() < 0.7)
    if training and p.regs[x].numel() // c < 2:
        raise Reject('one value per channel')
    ins = [x, p.randn([c], 'c'), p.uniform([c], 0.5, 2)]
    if rnd.random() < 0.7:
        ins += [view_leaf(p, [c]), view_leaf(p, [c])]
    y, rm, rv = p.op('batch_norm', ins, [training], [rnd.choice([0.1, 0.3]),
                                                     rnd.choice([1e-5, 1e-3])])
    # the running stats take part in the output, so they are checked
    y = p.op1('add', [y, p.op1('reshape', [rm], [c, 1, 1])])
    return p.op1('mul', [y, p.op1('reshape', [rv], [c, 1, 1])])


def d_resize(p):
    x = image(p, 48)
    rnd = p.rnd
    h, w = p.regs[x].shape[2], p.regs[x].shape[3]
    v = rnd.random()
    if v < 0.4:
        return p.op1('upsample_nearest2d', [x], [rnd.randint(1, 2 * h), rnd.randint(1, 2 * w)])
    if v < 0.6:
        return p.op1('upsample_nearest2d', [x], [], [rnd.choice([0.5, 1.5, 2.0]),
                                                     rnd.choice([1.0, 1.7, 2.0])])
    if v < 0.8:
        n, c = p.regs[x].shape[0], p.regs[x].shape[1]
        flat = p.op1('reshape', [x], [n, c * h * w])
        return p.op1('unflatten', [flat], [-1, c, -1, w] if rnd.random() < 0.5 else [1, c, h, w])
    training = rnd.randint(0, 1)
    return p.op1('dropout2d', [x], [training], [0.0 if training else rnd.choice([0.3, 0.5])])


CNN_DRAWS = [d_conv2d, d_conv1d, d_conv_transpose2d, d_pool, d_batch_norm, d_resize]


def make_cnn(rnd, gen):
    """A program of 1-3 CNN draws on a 4-D leaf, maybe followed by one of the older draws."""
    p = Prog(rnd, gen)
    s = [rnd.randint(1, 2), rnd.randint(1, 4), rnd.randint(2, 6), rnd.randint(2, 6)]
    while math.prod(s) > 96:
        s[rnd.randrange(4)] = 1
    view_leaf(p, s)
    ndraw = rnd.randint(1, 3)
    done = tries = 0
    while done < ndraw:
        tries += 1
        if tries > 60:
            raise Reject('stuck')
        draw = rnd.choice(CNN_DRAWS)
        mark = (len(p.lines), len(p.regs), p.nnew)
        try:
            out = draw(p)
            done += 1
        except (Reject, RuntimeError, ValueError, IndexError):
            del p.lines[mark[0]:], p.regs[mark[1]:], p.dep[mark[1]:]
            p.nnew = mark[2]
    if rnd.random() < 0.3:
        mark = (len(p.lines), len(p.regs), p.nnew)
        try:
            out = rnd.choice([d_unary, d_act, d_reduce, d_loss])(p)
        except (Reject, RuntimeError, ValueError, IndexError):
            del p.lines[mark[0]:], p.regs[mark[1]:], p.dep[mark[1]:]
            p.nnew = mark[2]
    if p.regs[out].numel() == 0 or not p.dep[out] or not isfloat(p.regs[out]):
        raise Reject('out')
    return p, out


def make(rnd, gen):
    p = Prog(rnd, gen)
    for _ in range(rnd.randint(1, 3)):
        view_leaf(p, rshape(rnd))
    ndraw = rnd.randint(2, 6)
    done = 0
    tries = 0
    while done < ndraw:
        tries += 1
        if tries > 60:
            raise Reject('stuck')
        draw = rnd.choice(DRAWS)
        if draw is d_loss and done < ndraw - 1:
            continue
        if done == ndraw - 1 and rnd.random() < 0.3:  # losses end programs
            draw = d_loss
        mark = (len(p.lines), len(p.regs), p.nnew)
        try:
            if len(p.lines) > 1 and rnd.random() < 0.2:  # use another leaf as the current one
                others = [i for i, l in enumerate(p.regs) if p.dep[i] and isfloat(l)]
                p.op1('add', [p.cur(), rnd.choice(others)])
            out = draw(p)
            done += 1
        except (Reject, RuntimeError, ValueError, IndexError):
            del p.lines[mark[0]:], p.regs[mark[1]:], p.dep[mark[1]:]
            p.nnew = mark[2]
    if p.regs[out].numel() == 0 or not p.dep[out] or not isfloat(p.regs[out]):
        raise Reject('out')
    return p, out


def run(lines, out, dtype, w):
    """Replays a program in dtype: (out, [int registers], {leaf register: grad})."""
    FDT[0] = dtype
    regs, leaves = [], {}
    for l in lines:
        if l[0] == 'leaf':
            kind, t = l[1], l[2]
            if kind in 'gc':
                t = t.to(dtype).detach().requires_grad_(kind == 'g')
                if kind == 'g':
                    leaves[len(regs)] = t
            regs.append(t)
        else:
            r = OPS[l[1]]([regs[i] for i in l[3]], l[4], l[5])
            outs = list(r) if isinstance(r, (tuple, list)) else [r]
            assert len(outs) == l[2], l
            regs.extend(outs)
    out = regs[out]
    (out * w.to(dtype)).sum().backward()
    grads = {i: (t.grad if t.grad is not None else torch.zeros_like(t)).detach()
             for i, t in leaves.items()}
    return out.detach(), regs, grads


def hexf(v):
    if math.isinf(v):
        return 'inf' if v > 0 else '-inf'
    h = float(v).hex()
    if 'p' in h and '.' in h:  # strip trailing zeros of the mantissa
        m, e = h.split('p')
        m = m.rstrip('0').rstrip('.')
        h = m + 'p' + e
    return h


def vals(t):
    t = t.reshape(-1)
    if t.dtype.is_floating_point:
        return ' '.join(hexf(v) for v in t.double().tolist())
    return ' '.join(str(int(v)) for v in t.tolist())


def shp(t):
    return ' '.join([str(t.dim())] + [str(n) for n in t.shape])


def program(rnd, gen, maker=make):
    p, out = maker(rnd, gen)
    w = (torch.randn(p.regs[out].shape, generator=gen, dtype=torch.float64)
         .to(torch.float32).to(torch.float64))
    try:
        o64, r64, g64 = run(p.lines, out, torch.float64, w)
        o32, r32, g32 = run(p.lines, out, torch.float32, w)
    except RuntimeError as e:
        raise Reject(str(e))
    ints, leafregs, n = [], set(), 0
    for l in p.lines:
        if l[0] == 'leaf':
            leafregs.add(n)
        n += 1 if l[0] == 'leaf' else l[2]
    for i, (a, b) in enumerate(zip(r64, r32)):
        if a.dtype.is_floating_point:
            continue
        if a.shape != b.shape or not torch.equal(a, b):
            raise Reject('f32 and f64 disagree on an integer result')
        if i not in leafregs:
            ints.append(i)
    if all((g == 0).all() for g in g64.values()):
        raise Reject('no gradient reaches a leaf')
    for a, b in [(o64, o32)] + [(g64[k], g32[k]) for k in g64]:
        if not torch.isfinite(a).all() or (a.numel() and a.abs().max() > 1e4):
            raise Reject('large')
        # PyTorch's own f32 result within 2e-6 of its f64 one (relative to 1 + |x|): not near
        # a kink, and not so ill-conditioned (cancellation) that f32 rounding order decides
        # the 1e-5 check
        if a.numel() and ((a - b.double()).abs() > 2e-6 * (1 + a.abs())).any():
            raise Reject('f32 far from f64')
    text = []
    for l in p.lines:
        if l[0] == 'leaf':
            text.append('leaf %s %s : %s' % (l[1], shp(l[2]), vals(l[2])))
        else:
            _, name, nout, ins, ints_, flts = l
            text.append(' '.join(['op', name, str(nout), str(len(ins))] + [str(i) for i in ins] +
                                 [str(len(ints_))] + [str(i) for i in ints_] +
                                 [str(len(flts))] + [hexf(f) for f in flts]))
    text.append('w %d %s : %s' % (out, shp(w), vals(w)))
    for i in ints:
        text.append('int %d %s : %s' % (i, shp(r64[i]), vals(r64[i])))
    for name, o, g in (('f64', o64, g64), ('f32', o32, g32)):
        text.append('out %s %s : %s' % (name, shp(o), vals(o)))
        for k in sorted(g):
            text.append('grad %s %d : %s' % (name, k, vals(g[k])))
    used = {l[1] for l in p.lines if l[0] == 'op'}
    return text, used


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else 'tests/reference/random_programs.txt'
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 11
    rnd = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    torch.set_num_threads(1)
    lines = ['# tinytorch random-program parity data: PyTorch %s, written by' % torch.__version__,
             '# /usr/bin/python3 tests/reference/gen_random_programs.py %s %d %d' %
             (out, count, seed),
             '# (the format is described at the top of that script)']
    uses = {}
    n = 0
    rejected = 0
    tries = 0
    # count programs; then, while an op is in fewer than 3, only programs that use such an op.
    # Two phases with their own random streams: the older vocabulary (BASE_OPS), then count / 8
    # programs over the CNN ops (CNN_DRAWS), so adding CNN ops left the first programs as they
    # were.
    phases = [(BASE_OPS, count, make, rnd, gen),
              (set(CNN_OPS), count // 8, make_cnn, random.Random(seed + 1),
               torch.Generator().manual_seed(seed + 1))]
    for vocab, want, maker, prnd, pgen in phases:
        start, tries = n, 0
        while True:
            missing = {o for o in vocab if uses.get(o, 0) < 3}
            if n - start >= want and (not missing or tries > 100 * want):
                break
            tries += 1
            try:
                text, used = program(prnd, pgen, maker)
            except Reject:
                rejected += 1
                continue
            if n - start >= want and not used & missing:
                continue
            lines.append('program %d' % n)
            lines += text
            lines.append('end')
            for u in used:
                uses[u] = uses.get(u, 0) + 1
            n += 1
    lines.append('count %d' % n)
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    missing = [o for o in OPS if uses.get(o, 0) < 3]
    print('%s: %d programs (%d drawn again), %d ops' % (out, n, rejected, len(uses)))
    print('programs per op:', ' '.join('%s=%d' % (k, uses.get(k, 0)) for k in sorted(OPS)))
    if missing:
        print('ops in fewer than 3 programs:', ' '.join(missing))
        sys.exit(1)


if __name__ == '__main__':
    main()
