"""A transformers GPT-2 built from a config (random weights, nothing downloaded), trained a few steps the way
the transformers causal-LM examples do (labels = input ids)."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=512, n_positions=64, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, config.vocab_size, (4, 32))
    model.train()
    for _ in range(6):
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
    print("loss", out.loss.item())


if __name__ == "__main__":
    main()
