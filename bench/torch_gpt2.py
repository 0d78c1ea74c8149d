#!/usr/bin/python3
"""The PyTorch side of bench_gpt2: GPT-2 124M as GPT2LMHeadModel computes it (learned positions,
LayerNorm with bias, biases in every Linear, tanh GELU, tied head; written here, no transformers
package), random weights initialized as GPT-2 and tinytorch do, random tokens. The same AdamW
training step at T = 1024 (dropout 0) and greedy sampling with a hand-written KV cache (16-token
prompt, 128 new tokens, batch 1), printing bench_gpt2's fields after `bench torch`. Optional:
needs Debian's python3-torch, never needed by `make test`.

    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch_gpt2.py train B [threads] [f32|bf16]
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch_gpt2.py sample [threads] [f32|bf16]

bf16 runs the forward under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's fastest CPU
setting (the backward follows the autocast dtypes; the master weights and AdamW stay f32). Peak
RSS is the process's (resource.getrusage): run one configuration per process.
"""
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no bench/__pycache__ left in the tree by the import below
from torch_ref import check_blas  # noqa: E402 (bench/ is on sys.path when this script runs)

N_LAYER, N_HEAD, N_EMBD, BLOCK, VOCAB = 12, 12, 768, 1024, 50257
WARMUP_STEPS, TIMED_STEPS, PROMPT, NEW_TOKENS, SAMPLE_RUNS = 1, 5, 16, 128, 3


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD)
        self.c_proj = nn.Linear(N_EMBD, N_EMBD)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK, dtype=torch.bool))
                             .view(1, 1, BLOCK, BLOCK))

    def forward(self, x, cache=None, pos=0):
        """x (B, T, C). cache: None, or a list [k, v] of (1, NH, BLOCK, HS) buffers (None until
        the first call) that receive this call's keys and values at positions pos .. pos+T."""
        b, t, c = x.shape
        hs = c // N_HEAD
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, N_HEAD, hs).transpose(1, 2)  # (B, NH, T, HS)
        k = k.view(b, t, N_HEAD, hs).transpose(1, 2)
        v = v.view(b, t, N_HEAD, hs).transpose(1, 2)
        if cache is not None:
            if cache[0] is None:
                cache[0] = k.new_zeros(b, N_HEAD, BLOCK, hs)
                cache[1] = v.new_zeros(b, N_HEAD, BLOCK, hs)
            cache[0][:, :, pos:pos + t] = k
            cache[1][:, :, pos:pos + t] = v
            k, v = cache[0][:, :, :pos + t], cache[1][:, :, :pos + t]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, T, pos + T)
        att = att.masked_fill(~self.bias[:, :, pos:pos + t, :pos + t], float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(N_EMBD)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(N_EMBD)
        self.c_fc = nn.Linear(N_EMBD, 4 * N_EMBD)
        self.c_proj = nn.Linear(4 * N_EMBD, N_EMBD)

    def forward(self, x, cache=None, pos=0):
        x = x + self.attn(self.ln_1(x), cache, pos)
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, N_EMBD)
        self.wpe = nn.Embedding(BLOCK, N_EMBD)
        self.h = nn.ModuleList([Block() for _ in range(N_LAYER)])
        self.ln_f = nn.LayerNorm(N_EMBD)
        self.lm_head = nn.Linear(N_EMBD, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight
        # GPT-2's init, as tinytorch's (models/gpt/gpt.h): weights N(0, 0.02), the residual
        # projections N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm gains 1
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                proj = name.endswith("c_proj.weight")
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * N_LAYER) if proj else 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, caches=None, pos=0):
        """idx (B, T) -> logits (B, T, V); caches: None, or one [k, v] list per layer."""
        t = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(pos, pos + t))
        for l, blk in enumerate(self.h):
            x = blk(x, None if caches is None else caches[l], pos)
        return self.lm_head(self.ln_f(x))


def autocast(precision):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


def median(v):
    v = sorted(v)
    h = len(v) // 2
    return v[h] if len(v) % 2 else 0.5 * (v[h - 1] + v[h])


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def check_loss_init(loss):
    if not abs(loss - math.log(VOCAB)) < 0.5:
        sys.exit(f"bench torch: the loss at init is {loss:.4f}, expected about "
                 f"ln({VOCAB}) = {math.log(VOCAB):.4f}; figures not printed")


def bench_train(model, batch, threads, precision):
    # nanoGPT's GPT-2 settings: AdamW lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on
    # matrices, gradient clipping at 1.0 (as bench_gpt2.c)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95))
    times, loss, loss0 = [], 0.0, 0.0
    for s in range(WARMUP_STEPS + TIMED_STEPS):
        x = torch.randint(VOCAB, (batch, BLOCK))
        y = torch.randint(VOCAB, (batch, BLOCK))
        t0 = time.perf_counter()
        with autocast(precision):
            logits = model(x)
            l = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
        l.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss = l.item()
        del logits, l
        if s >= WARMUP_STEPS:
            times.append((time.perf_counter() - t0) * 1e3)
        if s == 0:
            loss0 = loss
            check_loss_init(loss0)
    med = median(times)
    # nanoGPT's estimate_mfu count, as bench_gpt2.c: 6 N + 12 L T C per token, N without wpe
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    flops = (6 * n + 12 * N_LAYER * BLOCK * N_EMBD) * BLOCK * batch
    check_blas()
    print(f"bench torch train config=gpt2 batch={batch} block={BLOCK} threads={threads} "
          f"precision={precision} dropout=0 ms_per_step={med:.0f} "
          f"tokens_per_s={batch * BLOCK / (med / 1e3):.0f} gflops={flops / (med / 1e3) / 1e9:.1f} "
          f"peak_rss_mb={peak_rss_mb():.0f} loss_init={loss0:.4f} loss={loss:.4f} "
          f"steps={TIMED_STEPS} torch={torch.__version__}")


@torch.no_grad()
def generate(model, prompt, n_new, precision):
    """Greedy tokens after prompt (1, P) as tt_gpt_generate makes them: the prompt in one
    forward, then one forward per new token but the last, each reading the KV cache."""
    caches = [[None, None] for _ in range(N_LAYER)]
    out = []
    with autocast(precision):
        logits = model(prompt, caches, 0)[0, -1]
        pos = prompt.size(1)
        for i in range(n_new):
            tok = int(torch.argmax(logits))
            out.append(tok)
            if i == n_new - 1:
                break
            logits = model(torch.tensor([[tok]]), caches, pos)[0, -1]
            pos += 1
    return out


def bench_sample(model, threads, precision):
    model.eval()
    prompt = torch.randint(VOCAB, (1, PROMPT))
    times = []
    for r in range(1 + SAMPLE_RUNS):  # run 0 is the warm-up
        t0 = time.perf_counter()
        out = generate(model, prompt, NEW_TOKENS, precision)
        if r > 0:
            times.append((time.perf_counter() - t0) * 1e3)
        if not all(0 <= t < VOCAB for t in out):
            sys.exit(f"bench torch: a sampled id is outside [0, {VOCAB}): {out}")
    med = median(times)
    check_blas()
    print(f"bench torch sample config=gpt2 threads={threads} precision={precision} "
          f"prompt={PROMPT} tokens={NEW_TOKENS} greedy=1 cache=on "
          f"tokens_per_s={NEW_TOKENS / (med / 1e3):.1f} ms_per_token={med / NEW_TOKENS:.1f} "
          f"peak_rss_mb={peak_rss_mb():.0f} first_ids={','.join(map(str, out[:4]))} "
          f"torch={torch.__version__}")


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("train", "sample") or (args[0] == "train" and len(args) < 2):
        sys.exit("usage: torch_gpt2.py train B [threads] [f32|bf16] | "
                 "torch_gpt2.py sample [threads] [f32|bf16]")
    mode = args.pop(0)
    batch = int(args.pop(0)) if mode == "train" else 1
    threads = int(args[0]) if len(args) > 0 else 2
    precision = args[1] if len(args) > 1 else "f32"
    if precision not in ("f32", "bf16"):
        sys.exit(f"torch_gpt2.py: precision must be f32 or bf16, got {precision}")
    torch.manual_seed(1337)
    torch.set_num_threads(threads)
    model = GPT2()
    if mode == "train":
        bench_train(model, batch, threads, precision)
    else:
        bench_sample(model, threads, precision)


if __name__ == "__main__":
    main()
