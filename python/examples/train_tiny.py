"""A tiny transformer trained twice from the same seed: once with posenc's drop-in RotaryEmbedding
(posenc.torch.compat.rotary_embedding_torch: posenc's kernels, differentiable), once with the original
rotary-embedding-torch. The loss curves agree to float32 rounding for the first steps; the script prints both.

Model: token embedding, 2 pre-norm layers (4 heads of 16, causal attention with RoPE on q and k, a GELU MLP),
a linear head; task: the next token of sequences that repeat a random 5-token pattern (learnable only by
attending back 5 positions, which RoPE's relative positions make easy). 60 Adam steps on the CPU, one thread,
float32, under a minute.

Needs PyTorch (Debian's python3-torch) and rotary-embedding-torch 0.9.1 with einops (PyPI, --no-deps); without
them it prints "train_tiny.py: skipped: ..." and exits 0. Run: python python/examples/train_tiny.py
"""
import sys

try:
    import torch
    from rotary_embedding_torch import RotaryEmbedding as OriginalRotary
except ImportError as e:  # the documented skip: no PyTorch or rotary-embedding-torch here
    print(f"train_tiny.py: skipped: {e}")
    sys.exit(0)

from posenc.torch.compat.rotary_embedding_torch import RotaryEmbedding as PosencRotary

VOCAB, SEQ, DIM, HEADS, LAYERS, STEPS, BATCH = 16, 40, 64, 4, 2, 60, 16


class Block(torch.nn.Module):
    def __init__(self, rotary):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(DIM), torch.nn.LayerNorm(DIM)
        self.qkv, self.proj = torch.nn.Linear(DIM, 3 * DIM), torch.nn.Linear(DIM, DIM)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(DIM, 4 * DIM), torch.nn.GELU(), torch.nn.Linear(4 * DIM, DIM))
        self.rotary = rotary

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)  # (b, h, n, d)
        q, k = self.rotary.rotate_queries_or_keys(q), self.rotary.rotate_queries_or_keys(k)
        att = (q @ k.transpose(-1, -2)) / (DIM // HEADS) ** 0.5
        att = att.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, DIM))
        return x + self.mlp(self.norm2(x))


class Model(torch.nn.Module):
    def __init__(self, rotary_cls):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        rotary = rotary_cls(dim=DIM // HEADS)  # no parameters drawn: both runs initialise the same weights
        self.blocks = torch.nn.ModuleList(Block(rotary) for _ in range(LAYERS))
        self.head = torch.nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def batches(seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(STEPS):
        pattern = torch.randint(0, VOCAB, (BATCH, 5), generator=g)
        yield pattern.repeat(1, SEQ // 5 + 1)[:, : SEQ + 1]


def train(rotary_cls):
    torch.manual_seed(0)
    model = Model(rotary_cls)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    losses = []
    for seq in batches(1):
        logits = model(seq[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def main():
    torch.set_num_threads(1)
    ours, theirs = train(PosencRotary), train(OriginalRotary)
    print("step  posenc      rotary-embedding-torch")
    for i in range(0, STEPS, 5):
        print(f"{i:4d}  {ours[i]:.6f}    {theirs[i]:.6f}")
    print(f"{STEPS - 1:4d}  {ours[-1]:.6f}    {theirs[-1]:.6f}")
    first = max(abs(a - b) / b for a, b in zip(ours[:10], theirs[:10]))
    learned = ours[-1] < 0.5 * ours[0] and theirs[-1] < 0.5 * theirs[0]
    print(f"first 10 steps: max relative difference {first:.1e}; both learned the task: {learned}")
    # Positions < 40: the original's float32 angles are within ~1e-6 rad of posenc's double ones.
    if first > 1e-4 or not learned:
        print("train_tiny.py: the two runs differ", file=sys.stderr)
        sys.exit(1)
    print("posenc == rotary-embedding-torch in training, to float32 rounding")


if __name__ == "__main__":
    main()
