# The makemore MLP of examples/makemore.c in PyTorch. Usage: makemore.py [steps] [context]
import random, re, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
T = int(sys.argv[2]) if len(sys.argv) > 2 else 5
words = sorted(set(re.findall(r"[a-z]+", open("data/tinyshakespeare.txt").read().lower())))
random.seed(42)
random.shuffle(words)
n1, n2 = len(words) * 8 // 10, len(words) * 9 // 10


def build(ws):
    X, Y = [], []
    for w in ws:
        ctx = [0] * T
        for ch in [ord(c) - ord("a") + 1 for c in w] + [0]:
            X.append(ctx)
            Y.append(ch)
            ctx = ctx[1:] + [ch]
    return torch.tensor(X), torch.tensor(Y)


Xtr, Ytr = build(words[:n1])
Xva, Yva = build(words[n1:n2])
print(f"{len(words)} words, {len(Ytr)} train / {len(Yva)} val examples, context {T}")
torch.manual_seed(42)
model = nn.Sequential(nn.Embedding(27, 10), nn.Flatten(), nn.Linear(T * 10, 200, bias=False),
                      nn.BatchNorm1d(200), nn.Tanh(), nn.Linear(200, 27))
with torch.no_grad():
    model[-1].weight *= 0.1
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(sum(p.numel() for p in model.parameters()), "parameters")
t0 = time.process_time()
for step in range(steps):
    for g in opt.param_groups:
        g["lr"] = 0.1 if step < steps // 2 else 0.01
    ix = torch.randint(0, len(Ytr), (32,))
    loss = F.cross_entropy(model(Xtr[ix]), Ytr[ix])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % (steps // 5) == 0:
        print(f"step {step:6d} loss {loss.item():.4f}")
model.eval()
with torch.no_grad():
    print(f"train {F.cross_entropy(model(Xtr), Ytr).item():.4f} "
          f"val {F.cross_entropy(model(Xva), Yva).item():.4f} "
          f"({time.process_time() - t0:.1f} s cpu)")
    for _ in range(20):
        ctx, out = [0] * T, []
        while True:
            ch = torch.multinomial(F.softmax(model(torch.tensor([ctx])), -1), 1).item()
            if ch == 0:
                break
            out.append(chr(ord("a") + ch - 1))
            ctx = ctx[1:] + [ch]
        print("".join(out))
