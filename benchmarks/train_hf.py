"""A ``transformers`` model built from a config (random weights, no download) trained on random tokens.

The workload of ``bench_hf.py``: nothing is fetched (no weights, no tokenizer), the model is made
from ``GPT2Config``/``BertConfig`` and trained with AdamW on CPU, one thread.

    python benchmarks/train_hf.py --model gpt2 --steps 100
    python -m kernelscope run --no-view -o /tmp/hf.ksprof benchmarks/train_hf.py --model gpt2 --steps 100
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import transformers


def build(name: str) -> tuple[torch.nn.Module, int]:
    if name == "gpt2":
        config = transformers.GPT2Config(
            vocab_size=2048,
            n_positions=128,
            n_embd=128,
            n_layer=2,
            n_head=4,
            bos_token_id=0,
            eos_token_id=0,
            attn_implementation="eager",
        )
        return transformers.GPT2LMHeadModel(config), config.vocab_size
    if name == "bert":
        config = transformers.BertConfig(
            vocab_size=2048,
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=512,
            max_position_embeddings=128,
            attn_implementation="eager",
        )
        return transformers.BertForMaskedLM(config), config.vocab_size
    raise SystemExit(f"unknown model {name!r}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=("gpt2", "bert"), default="gpt2")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--times-out", help="write per-step times (s) as JSON here")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, vocab = build(args.model)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times: list[float] = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        ids = torch.randint(0, vocab, (args.batch, args.seq))
        out = model(input_ids=ids, labels=ids)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    if args.times_out:
        with open(args.times_out, "w", encoding="utf-8") as fh:
            json.dump({"step_s": times}, fh)


if __name__ == "__main__":
    main()
