#!/usr/bin/python3
"""The PyTorch side of `make bench`: the same baby and mid GPT training steps (nanoGPT's model:
learned positions, pre-norm LayerNorm without bias, exact GELU, tied head; AdamW with
beta2 0.99 and weight decay 0.1 on matrices; clip 1.0) on random tokens, printing the fields of
bench_train. Optional: needs Debian's python3-torch, never needed by `make test`.

    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch_ref.py [baby|mid] [threads] [f32|bf16]
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch_ref.py lenet [threads] [f32|bf16]

    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch_ref.py decode [baby|mid] [threads] [f32|bf16]

decode: bench_decode's sampling with the KV cache (block - 1 tokens, one at a time).

lenet: one training epoch of bench_lenet's CNN (examples/lenet.c's layers, batch 128, AdamW)
on 60,000 random 28 x 28 images in shuffled mini-batches, printing bench_lenet's fields.

bf16 runs the forward under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's fastest CPU
setting (the backward follows the autocast dtypes); the master weights and AdamW stay f32.
"""
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {  # name: (n_layer, n_head, n_embd, block, batch, vocab, timed steps)
    "baby": (4, 4, 128, 64, 12, 65, 30),
    "mid": (6, 6, 384, 256, 8, 65, 6),
}


class Block(nn.Module):
    def __init__(self, c, nh, block):
        super().__init__()
        self.nh = nh
        self.ln1 = nn.LayerNorm(c)  # torch 1.13 has no bias=False; the bias costs nothing
        self.qkv = nn.Linear(c, 3 * c, bias=False)
        self.proj = nn.Linear(c, c, bias=False)
        self.ln2 = nn.LayerNorm(c)
        self.fc = nn.Linear(c, 4 * c, bias=False)
        self.fc_proj = nn.Linear(4 * c, c, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.nh, c // self.nh).transpose(1, 2)
        k = k.view(b, t, self.nh, c // self.nh).transpose(1, 2)
        v = v.view(b, t, self.nh, c // self.nh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))

    def step(self, x, ck, cv, pos):
        """One token x (1, 1, c) at position pos with the KV cache ck, cv (1, nh, block, hs):
        its keys and values are written at pos, its query attends to positions 0 .. pos."""
        c = x.size(2)
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(1, 1, self.nh, c // self.nh).transpose(1, 2)
        ck[:, :, pos] = k.view(1, self.nh, c // self.nh)
        cv[:, :, pos] = v.view(1, self.nh, c // self.nh)
        att = (q @ ck[:, :, :pos + 1].transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        y = F.softmax(att, dim=-1) @ cv[:, :, :pos + 1]
        x = x + self.proj(y.transpose(1, 2).reshape(1, 1, c))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, n_layer, nh, c, block, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(block, c)
        self.blocks = nn.ModuleList([Block(c, nh, block) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(c)
        self.head = nn.Linear(c, vocab, bias=False)
        self.head.weight = self.wte.weight
        # tinytorch's GPT init (models/gpt/gpt.h): N(0, 0.02), residual projections
        # N(0, 0.02 / sqrt(2 n_layer)), so both sides start from the same loss (about ln 65)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def decode_step(self, tok, pos, cache):
        """Logits (vocab,) after token tok at position pos, through the KV cache."""
        x = self.wte.weight[tok].view(1, 1, -1) + self.wpe.weight[pos].view(1, 1, -1)
        for blk, (ck, cv) in zip(self.blocks, cache):
            x = blk.step(x, ck, cv, pos)
        return self.head(self.ln_f(x)).view(-1)

    def forward(self, idx, targets):
        t = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def check_blas():
    """Warns when PyTorch's f32 GEMMs ran on the reference BLAS (Debian's libblas3 without
    OpenBLAS installed): that is 20-40x slower and no fair comparison."""
    with open("/proc/self/maps") as f:
        maps = f.read()
    if "libblas" in maps and "openblas" not in maps:
        print("bench torch: WARNING: PyTorch runs on the reference BLAS; install OpenBLAS "
              "(apt-get install libopenblas0-pthread) for a fair comparison", file=sys.stderr)


def lenet_model():
    """examples/lenet.c's CNN: conv(1->16, 5x5, pad 2)-relu-pool, conv(16->32, 5x5)-relu-pool,
    flatten, 800-120-84-10."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(800, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def lenet_step(model, opt, xb, yb, precision):
    if precision == "bf16":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xb), yb)
    else:
        loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def bench_lenet(threads, precision):
    n, batch = 60000, 128
    torch.manual_seed(1337)
    torch.set_num_threads(threads)
    x = torch.randn(n, 1, 28, 28)
    y = torch.randint(10, (n,))
    model = lenet_model()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4},
                             {"params": no_decay, "weight_decay": 0.0}], lr=2e-3)
    perm = torch.randperm(n)
    for s in range(5):  # warm-up
        idx = perm[s * batch:(s + 1) * batch]
        lenet_step(model, opt, x[idx], y[idx], precision)
    t0 = time.perf_counter()
    perm = torch.randperm(n)
    for s in range(0, n, batch):
        idx = perm[s:s + batch]
        loss = lenet_step(model, opt, x.index_select(0, idx), y.index_select(0, idx), precision)
    ms = (time.perf_counter() - t0) * 1e3
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    check_blas()
    print(f"bench torch config=lenet threads={threads} precision={precision} batch={batch} "
          f"ms_per_epoch={ms:.1f} images_per_s={n / (ms / 1e3):.0f} peak_rss_mb={rss:.1f} "
          f"loss={loss.item():.4f} torch={torch.__version__}")


def bench_decode(name, threads, precision):
    """bench_decode's figure: block - 1 tokens from a one-token prompt with the KV cache,
    sampled at temperature 0.8 (top-k 200 keeps all 65 tokens), no grad; median of 5 runs."""
    n_layer, nh, c, block, _, vocab, _ = CONFIGS[name]
    torch.manual_seed(1337)
    torch.set_num_threads(threads)
    model = GPT(n_layer, nh, c, block, vocab).eval()
    n = block - 1

    def run():
        cache = [(torch.zeros(1, nh, block, c // nh), torch.zeros(1, nh, block, c // nh))
                 for _ in model.blocks]
        tok = 0
        t0 = time.perf_counter()
        for pos in range(n):
            logits = model.decode_step(tok, pos, cache).float()
            tok = int(torch.multinomial(F.softmax(logits / 0.8, dim=-1), 1))
        return time.perf_counter() - t0

    times = []
    with torch.inference_mode():
        for r in range(6):
            if precision == "bf16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    dt = run()
            else:
                dt = run()
            if r > 0:  # run 0 warms up
                times.append(dt)
    times.sort()
    check_blas()
    print(f"bench torch decode config={name} threads={threads} precision={precision} "
          f"tokens={n} tokens_per_s={n / times[len(times) // 2]:.0f} init=random "
          f"torch={torch.__version__}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "decode":
        bench_decode(sys.argv[2] if len(sys.argv) > 2 else "mid",
                     int(sys.argv[3]) if len(sys.argv) > 3 else 1,
                     sys.argv[4] if len(sys.argv) > 4 else "f32")
        return
    name = sys.argv[1] if len(sys.argv) > 1 else "baby"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    precision = sys.argv[3] if len(sys.argv) > 3 else "f32"  # f32, or bf16: CPU autocast
    if name == "lenet":
        bench_lenet(threads, precision)
        return
    n_layer, nh, c, block, batch, vocab, steps = CONFIGS[name]
    torch.manual_seed(1337)
    torch.set_num_threads(threads)
    model = GPT(n_layer, nh, c, block, vocab)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))
    times = []
    loss = None
    for s in range(3 + steps):
        x = torch.randint(vocab, (batch, block))
        y = torch.randint(vocab, (batch, block))
        t0 = time.perf_counter()
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(x, y)
        else:
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if s >= 3:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    h = len(times) // 2
    med = times[h] if len(times) % 2 else 0.5 * (times[h - 1] + times[h])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    check_blas()
    print(f"bench torch config={name} threads={threads} precision={precision} "
          f"ms_per_step={med:.2f} "
          f"tokens_per_s={batch * block / (med / 1e3):.0f} peak_rss_mb={rss:.1f} "
          f"loss={loss.item():.4f} steps={steps} torch={torch.__version__}")


if __name__ == "__main__":
    main()
