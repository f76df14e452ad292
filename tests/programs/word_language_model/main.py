"""Training loop as in pytorch/examples word_language_model/main.py (LSTM, plain SGD by hand, gradient
clipping, validation after each epoch and a final test), on a generated corpus, sized to run in seconds."""

import math

import model
import torch
import torch.nn as nn

import data

torch.manual_seed(1111)
device = torch.device("cpu")
bptt = 20
batch_size = 10
eval_batch_size = 10
lr = 20.0
clip = 0.25
epochs = 2

corpus = data.Corpus()


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


train_data = batchify(corpus.train, batch_size)
val_data = batchify(corpus.valid, eval_batch_size)
test_data = batchify(corpus.test, eval_batch_size)

ntokens = len(corpus.dictionary)
model = model.RNNModel(ntokens, 32, 32, 2, 0.2).to(device)
criterion = nn.NLLLoss()


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].view(-1)
    return data, target


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    model.train()
    total_loss = 0.0
    hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):  # noqa: B007 (as in pytorch/examples)
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
    return total_loss / (batch + 1)


for epoch in range(1, epochs + 1):
    train_loss = train()
    val_loss = evaluate(val_data)
    print(
        f"| epoch {epoch} | train loss {train_loss:5.2f} | valid loss {val_loss:5.2f} | ppl {math.exp(val_loss):8.2f}"
    )

test_loss = evaluate(test_data)
print(f"| end of training | test loss {test_loss:5.2f} | test ppl {math.exp(test_loss):8.2f}")
