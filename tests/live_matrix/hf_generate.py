import torch
from _common import step
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(config).eval()  # random weights from a config: nothing downloaded
ids = torch.randint(0, 256, (1, 8))
for _ in range(2):
    out = model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
    step()
print("generated", out.shape)
