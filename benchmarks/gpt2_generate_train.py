"""A transformers GPT-2 built from a config (no download): generate() 16 tokens, then 5 training steps.

The issue-24 case of a program whose set-up and first calls are not its steps:
    kernelscope run benchmarks/gpt2_generate_train.py
"""

import torch
import transformers

torch.manual_seed(0)
config = transformers.GPT2Config(
    vocab_size=2048, n_positions=128, n_embd=128, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
)
model = transformers.GPT2LMHeadModel(config)
model.eval()
prompt = torch.randint(0, 2048, (1, 8))
out = model.generate(prompt, max_new_tokens=16, do_sample=False, pad_token_id=0)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for _ in range(5):
    ids = torch.randint(0, 2048, (4, 64))
    loss = model(ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done", out.shape, float(loss))
