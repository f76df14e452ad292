"""A small nanoGPT-style character model trained on CPU: the workload of ``bench_run.py``.

Written for the benchmark (not ``examples/tiny_transformer.py``): token + position embeddings,
pre-LayerNorm blocks of causal self-attention (explicit softmax attention, as in nanoGPT without
flash) and a GELU MLP, weight-tied head, AdamW with gradient clipping, batches drawn from a
synthetic corpus made at start-up. One thread. Run it directly or under a profiler:

    python benchmarks/train_nanogpt.py --steps 400 --times-out /tmp/t.json
    python -m kernelscope run --no-view -o /tmp/x.ksprof benchmarks/train_nanogpt.py --steps 400
    python benchmarks/train_nanogpt.py --steps 200 --torch-profiler     # torch.profiler around the loop
    python benchmarks/train_nanogpt.py --seconds 180                    # train for a fixed time

``--times-out`` writes the per-step wall and CPU times (seconds) as JSON; ``--ks-step`` calls
``kernelscope.step()`` after every step (a no-op when no kernelscope session runs).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float) -> None:
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("bias", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd: int, dropout: float) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(
        self, vocab: int = 256, block_size: int = 64, n_layer: int = 4, n_head: int = 4, n_embd: int = 128
    ) -> None:
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size, 0.1) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def train_step(model: NanoGPT, opt: torch.optim.Optimizer, corpus: torch.Tensor, batch: int = 8) -> None:
    """One training step on a random batch of ``corpus`` (the step every nanoGPT benchmark times)."""
    block = model.block_size
    ix = torch.randint(len(corpus) - block - 1, (batch,))
    x = torch.stack([corpus[i : i + block] for i in ix.tolist()])
    y = torch.stack([corpus[i + 1 : i + 1 + block] for i in ix.tolist()])
    loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seconds", type=float, default=0.0, help="train for this long instead of --steps")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ks-step", action="store_true", help="call kernelscope.step() after every step")
    ap.add_argument(
        "--torch-profiler", action="store_true", help="torch.profiler(stack, modules, shapes) around the loop"
    )
    ap.add_argument("--times-out", help="write per-step times (s) as JSON here")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    corpus = torch.randint(0, 256, (200_000,))  # a synthetic "dataset": no downloads
    model = NanoGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)

    step_fn = None
    if args.ks_step:
        import kernelscope

        step_fn = kernelscope.step

    times: list[float] = []
    cpu: list[float] = []
    deadline = time.perf_counter() + args.seconds if args.seconds else None

    def loop() -> None:
        model.train()
        i = 0
        while (i < args.steps) if deadline is None else (time.perf_counter() < deadline):
            t0, c0 = time.perf_counter(), time.process_time()
            train_step(model, opt, corpus, args.batch)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)  # robust to other processes on a shared machine
            if step_fn is not None:
                step_fn()
            i += 1

    post = 0.0
    torch_error = None
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile

        try:
            with profile(
                activities=[ProfilerActivity.CPU], with_stack=True, with_modules=True, record_shapes=True
            ) as prof:
                loop()
            t0 = time.perf_counter()
            prof.key_averages(group_by_stack_n=5)  # torch's own aggregation of the same information
            post = time.perf_counter() - t0
        except UnicodeDecodeError as exc:
            # torch 2.13 sometimes fails to parse its own results (an event name that is not UTF-8,
            # seen at 200 steps): the loop's step times are still valid, the post-processing is lost
            print(f"torch.profiler failed after the loop: {exc}", file=sys.stderr)
            torch_error = str(exc)
    else:
        loop()
    if args.times_out:
        with open(args.times_out, "w", encoding="utf-8") as fh:
            json.dump({"step_s": times, "step_cpu_s": cpu, "post_s": post, "torch_error": torch_error}, fh)


if __name__ == "__main__":
    main()
