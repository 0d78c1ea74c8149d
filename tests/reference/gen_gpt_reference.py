#!/usr/bin/env python3
# PyTorch reference for tests/test_gpt_parity.c: builds the same small GPT as models/gpt in
# float32, for the configs "default" and "modern", and writes tests/reference/gpt_<config>.bin
# (format: tests/reference/README.md). Needs torch; `make test` never runs it.
#
#     /usr/bin/python3 tests/reference/gen_gpt_reference.py [OUTDIR]
#     /usr/bin/python3 tests/reference/gen_gpt_reference.py --autocast [OUTDIR]
#
# --autocast writes gpt_<config>_bf16.bin instead: the same models, weights and batch, with the
# forward under torch.autocast("cpu", dtype=torch.bfloat16) (the Linear layers and the tied
# head's matmul take bf16 inputs and accumulate in f32, their outputs are bf16), and the logits,
# loss and gradients of that forward (no AdamW steps); attention is plain autocast too (q k^T
# and att v in bf16, as an unfused attention runs). Beside them, under "emu.", the same forward
# and backward with tinytorch's autocast emulated in f32 (BF16Linear below: each product's
# inputs, and in the backward the incoming gradient, rounded to bf16, the product and every
# output in f32; BF16Attention: the fused attention's products with bf16 inputs, its softmax
# statistics in f32): what tinytorch should match to f32 accuracy.
#
# The modules are written out here (not taken from torch.nn where the formula could differ) so
# they follow tinytorch's formulas: pre-norm blocks, attention scaled by 1/sqrt(HS) with a
# causal mask, GQA by repeating each key/value head over its query heads, RoPE in the
# rotate-half layout (base 10000), LayerNorm eps 1e-5, RMSNorm eps 1e-5 (1e-6 in QK-norm),
# exact GELU, relu2 = relu(x)^2.
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- what is generated ----

COMMON = dict(vocab_size=37, block_size=16, n_layer=2, n_head=4, n_embd=32)
CONFIGS = {
    # GPT-2 style: learned positions, layernorm, gelu, tied, no bias, MHA.
    "default": dict(COMMON, n_kv_head=4, bias=False, rope=False, rmsnorm=False, relu2=False,
                    tie_weights=True, qk_norm=False),
    # rope + rmsnorm + relu2 + GQA + untied + qk_norm; with Linear biases, so their path and
    # gradients are covered too.
    "modern": dict(COMMON, n_kv_head=2, bias=True, rope=True, rmsnorm=True, relu2=True,
                   tie_weights=False, qk_norm=True),
}
SEEDS = {"default": 1337, "modern": 4242}
B, T = 3, 16
NORM_EPS, QK_NORM_EPS, ROPE_BASE = 1e-5, 1e-6, 10000.0
# AdamW on the same batch: nanoGPT's parameter groups (decay only tensors with ndim >= 2),
# gradients clipped to global norm CLIP before each step.
ADAMW = dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1, clip=1.0, steps=10)
# The 1-D parameters (biases, norm gains) start at 0 and 1 as in nanoGPT; the reference then
# adds N(0, PERTURB^2) to them so the test sees weights where a swapped gain/bias would show.
PERTURB = 0.1

# ---- modules (letters: B batch, T time, C channels, NH heads, NKV kv heads, HS head size) ----


class LayerNorm(nn.Module):
    def __init__(self, dim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, NORM_EPS)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):  # x / sqrt(mean(x^2) + eps) * w
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(cfg, dim):
    return RMSNorm(dim, NORM_EPS) if cfg["rmsnorm"] else LayerNorm(dim, cfg["bias"])


def rope_tables(head_dim, max_len):
    # angle[p, i] = p * base^(-2i/HS) for i < HS/2, repeated in both halves; computed in
    # float64 and rounded to float32, as nn/positional.c does.
    half = head_dim // 2
    i = torch.arange(half, dtype=torch.float64)
    theta = ROPE_BASE ** (-2.0 * i / head_dim)
    p = torch.arange(max_len, dtype=torch.float64)
    ang = torch.outer(p, theta)
    ang = torch.cat([ang, ang], dim=-1)  # (L, HS)
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):  # x (B, n, T, HS): x cos + rotate_half(x) sin
    t, half = x.shape[-2], x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos[:t] + rot * sin[:t]


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, nh, nkv = cfg["n_embd"], cfg["n_head"], cfg["n_kv_head"]
        self.nh, self.nkv, self.hs = nh, nkv, C // nh
        self.q_proj = nn.Linear(C, nh * self.hs, bias=cfg["bias"])
        self.k_proj = nn.Linear(C, nkv * self.hs, bias=cfg["bias"])
        self.v_proj = nn.Linear(C, nkv * self.hs, bias=cfg["bias"])
        self.o_proj = nn.Linear(C, C, bias=cfg["bias"])
        self.qk_norm = cfg["qk_norm"]
        if self.qk_norm:
            self.q_norm = RMSNorm(self.hs, QK_NORM_EPS)
            self.k_norm = RMSNorm(self.hs, QK_NORM_EPS)
        self.rope = cfg["rope"]
        if self.rope:
            cos, sin = rope_tables(self.hs, cfg["block_size"])
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
        L = cfg["block_size"]
        self.register_buffer("mask", torch.triu(torch.ones(L, L, dtype=torch.bool), 1),
                             persistent=False)

    def forward(self, x):  # x (B, T, C)
        b, t, c = x.shape
        q = self.q_proj(x).view(b, t, self.nh, self.hs).transpose(1, 2)   # (B, NH, T, HS)
        k = self.k_proj(x).view(b, t, self.nkv, self.hs).transpose(1, 2)  # (B, NKV, T, HS)
        v = self.v_proj(x).view(b, t, self.nkv, self.hs).transpose(1, 2)  # (B, NKV, T, HS)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rope:
            q, k = apply_rope(q, self.cos, self.sin), apply_rope(k, self.cos, self.sin)
        rep = self.nh // self.nkv  # kv head g serves query heads g*rep .. g*rep + rep - 1
        k = k.repeat_interleave(rep, dim=1)  # (B, NH, T, HS)
        v = v.repeat_interleave(rep, dim=1)
        scale = 1.0 / math.sqrt(self.hs)
        if EMULATE_BF16:
            y = BF16Attention.apply(q, k, v, self.mask[:t, :t], scale)
        else:
            att = (q @ k.transpose(-2, -1)) * scale  # (B, NH, T, T)
            att = att.masked_fill(self.mask[:t, :t], float("-inf"))
            y = F.softmax(att, dim=-1) @ v            # (B, NH, T, HS)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, c))


def bf16(t):  # rounded to bf16 (nearest even), back in f32
    return t.bfloat16().float()


class BF16Linear(torch.autograd.Function):
    """x @ w^T (+ b) with bf16-rounded inputs and f32 outputs, forward and backward."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        y = bf16(x) @ bf16(w).t()
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = bf16(g) @ bf16(w)
        gw = bf16(g).reshape(-1, g.shape[-1]).t() @ bf16(x).reshape(-1, x.shape[-1])
        gb = g.reshape(-1, g.shape[-1]).sum(0) if ctx.has_bias else None
        return gx, gw, gb


class BF16Attention(torch.autograd.Function):
    """softmax(q k^T scale, masked) v as tinytorch's fused attention computes it under bf16
    autocast when all keys fit one tile of 32 (T <= 32 here): products with bf16 inputs and f32
    outputs; the unnormalized weights exp(s - max) rounded to bf16 for the product with v and
    the result divided by their f32 sum. Backward (FlashAttention's formulas): P = exp(s - lse),
    dv = R(P)^T R(dy), dP = R(dy) R(v)^T, dS = P (dP - rowsum(dy y)), dq = scale R(dS) R(k),
    dk = scale R(dS)^T R(q), R rounding to bf16."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale):
        assert q.shape[-2] <= 32
        s = (bf16(q) @ bf16(k).transpose(-2, -1)) * scale
        s = s.masked_fill(mask, float("-inf"))
        m = s.amax(-1, keepdim=True)
        e = torch.exp(s - m)
        l = e.sum(-1, keepdim=True)
        y = (bf16(e) @ bf16(v)) / l
        ctx.save_for_backward(q, k, v, s, m + torch.log(l), y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, dy):
        q, k, v, s, lse, y = ctx.saved_tensors
        p = torch.exp(s - lse)
        dv = bf16(p).transpose(-2, -1) @ bf16(dy)
        dp = bf16(dy) @ bf16(v).transpose(-2, -1)
        ds = p * (dp - (dy * y).sum(-1, keepdim=True))
        dq = (bf16(ds) @ bf16(k)) * ctx.scale
        dk = (bf16(ds).transpose(-2, -1) @ bf16(q)) * ctx.scale
        return dq, dk, dv, None, None


EMULATE_BF16 = False  # set by generate_autocast: Linear and the tied head through BF16Linear
_linear_forward = nn.Linear.forward


def _emulated_linear_forward(self, x):
    if EMULATE_BF16:
        return BF16Linear.apply(x, self.weight, self.bias)
    return _linear_forward(self, x)


nn.Linear.forward = _emulated_linear_forward


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        self.fc = nn.Linear(C, 4 * C, bias=cfg["bias"])
        self.proj = nn.Linear(4 * C, C, bias=cfg["bias"])
        self.relu2 = cfg["relu2"]

    def forward(self, x):
        h = self.fc(x)
        h = F.relu(h).square() if self.relu2 else F.gelu(h)  # exact (erf) GELU
        return self.proj(h)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = make_norm(cfg, cfg["n_embd"])
        self.attn = Attention(cfg)
        self.norm2 = make_norm(cfg, cfg["n_embd"])
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        V, C = cfg["vocab_size"], cfg["n_embd"]
        self.wte = nn.Embedding(V, C)
        if not cfg["rope"]:
            self.wpe = nn.Embedding(cfg["block_size"], C)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
        self.ln_f = make_norm(cfg, C)
        if not cfg["tie_weights"]:
            self.lm_head = nn.Linear(C, V, bias=False)
        self.init_weights()

    def init_weights(self):
        # nanoGPT: Linear and Embedding weights N(0, 0.02), biases 0, norm gains 1, residual
        # projections N(0, 0.02 / sqrt(2 n_layer)).
        resid_std = 0.02 / math.sqrt(2 * self.cfg["n_layer"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    resid = name.endswith("attn.o_proj.weight") or name.endswith("mlp.proj.weight")
                    p.normal_(0.0, resid_std if resid else 0.02)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.fill_(1.0)

    def forward(self, idx, targets):  # idx, targets (B, T) -> logits (B, T, V), loss
        x = self.wte(idx)
        if not self.cfg["rope"]:
            x = x + self.wpe(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        x = self.ln_f(x)
        if self.cfg["tie_weights"]:
            logits = (BF16Linear.apply(x, self.wte.weight, None) if EMULATE_BF16
                      else x @ self.wte.weight.t())
        else:
            logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits, loss


# ---- the file format (tests/reference/README.md) ----

MAGIC = b"TTREF001"
DTYPES = {torch.float32: (0, "<f4"), torch.float64: (1, "<f8"), torch.int32: (2, "<i4"),
          torch.int64: (3, "<i8")}


def write_reference(path, entries):
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(entries)))
        for name, t in entries:
            t = t.detach().contiguous().cpu()
            code, fmt = DTYPES[t.dtype]
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<II", code, t.dim()))
            f.write(struct.pack("<%dq" % t.dim(), *t.shape))
            f.write(t.numpy().astype(fmt).tobytes())


def scalar_i64(v):
    return torch.tensor(int(v), dtype=torch.int64)


def scalar_f64(v):
    return torch.tensor(float(v), dtype=torch.float64)


def generate(config_name, outdir):
    cfg = CONFIGS[config_name]
    torch.manual_seed(SEEDS[config_name])
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(PERTURB * torch.randn_like(p))
    params = list(model.named_parameters())
    initial = [(n, p.detach().clone()) for n, p in params]
    tokens = torch.randint(0, cfg["vocab_size"], (B, T), dtype=torch.int64)
    targets = torch.randint(0, cfg["vocab_size"], (B, T), dtype=torch.int64)

    logits, loss = model(tokens, targets)
    loss.backward()
    grads = [(n, p.grad.detach().clone()) for n, p in params]

    decay = [p for _, p in params if p.dim() >= 2]
    no_decay = [p for _, p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ADAMW["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=ADAMW["lr"],
                            betas=(ADAMW["beta1"], ADAMW["beta2"]), eps=ADAMW["eps"])
    model.zero_grad(set_to_none=True)
    losses, norms = [], []
    for _ in range(ADAMW["steps"]):  # loss i is measured after i updates, before update i+1
        _, l = model(tokens, targets)
        l.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), ADAMW["clip"])))
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(l.item())

    entries = [("config." + k, scalar_i64(v)) for k, v in cfg.items()]
    entries += [("adamw." + k, scalar_f64(v)) for k, v in ADAMW.items()]
    entries += [("param." + n, t) for n, t in initial]
    entries += [("tokens", tokens.int()), ("targets", targets.int()),
                ("logits", logits), ("loss", loss)]
    entries += [("grad." + n, g) for n, g in grads]
    entries += [("adamw.losses", torch.tensor(losses, dtype=torch.float32)),
                ("adamw.grad_norms", torch.tensor(norms, dtype=torch.float64))]
    path = os.path.join(outdir, "gpt_%s.bin" % config_name)
    write_reference(path, entries)
    nparams = sum(p.numel() for _, p in params)
    print("wrote %s: %d entries, %d parameter tensors (%d values), loss %.6f, "
          "AdamW losses %.4f .. %.4f, grad norms %.3f .. %.3f (clip %g)" %
          (path, len(entries), len(params), nparams, loss.item(), losses[0], losses[-1],
           norms[0], norms[-1], ADAMW["clip"]))


def generate_autocast(config_name, outdir):
    cfg = CONFIGS[config_name]
    torch.manual_seed(SEEDS[config_name])  # the same draws as generate(): weights and batch
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(PERTURB * torch.randn_like(p))
    params = list(model.named_parameters())
    initial = [(n, p.detach().clone()) for n, p in params]
    tokens = torch.randint(0, cfg["vocab_size"], (B, T), dtype=torch.int64)
    targets = torch.randint(0, cfg["vocab_size"], (B, T), dtype=torch.int64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits, loss = model(tokens, targets)
    loss.backward()
    grads = [(n, p.grad.detach().clone()) for n, p in params]
    model.zero_grad(set_to_none=True)
    global EMULATE_BF16
    EMULATE_BF16 = True
    emu_logits, emu_loss = model(tokens, targets)
    emu_loss.backward()
    EMULATE_BF16 = False
    emu_grads = [(n, p.grad.detach().clone()) for n, p in params]
    entries = [("config." + k, scalar_i64(v)) for k, v in cfg.items()]
    entries += [("param." + n, t) for n, t in initial]
    entries += [("tokens", tokens.int()), ("targets", targets.int()),
                ("logits", logits.float()), ("loss", loss.float())]
    entries += [("grad." + n, g) for n, g in grads]
    entries += [("emu.logits", emu_logits), ("emu.loss", emu_loss)]
    entries += [("emu.grad." + n, g) for n, g in emu_grads]
    path = os.path.join(outdir, "gpt_%s_bf16.bin" % config_name)
    write_reference(path, entries)
    print("wrote %s: %d entries, logits %s, loss %.6f (bf16 autocast), %.6f (emulated)" %
          (path, len(entries), logits.dtype, loss.item(), emu_loss.item()))


def main():
    args = sys.argv[1:]
    autocast = "--autocast" in args
    args = [a for a in args if a != "--autocast"]
    outdir = args[0] if args else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    for name in CONFIGS:
        (generate_autocast if autocast else generate)(name, outdir)


if __name__ == "__main__":
    main()
