"""A word-level LSTM language model trained the way pytorch/examples' ``word_language_model`` does it.

Written here after that example's structure (a Dictionary/Corpus that tokenizes a text file line by line
into tensors, ``batchify``/``get_batch``, an ``RNNModel`` of Embedding → LSTM → Linear, truncated BPTT with
``repackage_hidden``, gradient clipping and a manual SGD update with no optimizer object, evaluation on a
validation split after each epoch) on a corpus it generates itself (Zipf-distributed words, no download).

    python benchmarks/word_lm.py --epochs 1 --emsize 64 --nhid 64
    kernelscope run benchmarks/word_lm.py --epochs 1 --emsize 64 --nhid 64
"""

from __future__ import annotations

import argparse
import math
import os
import random
import tempfile
import time

import torch
from torch import nn


class Dictionary:
    def __init__(self) -> None:
        self.word2idx: dict[str, int] = {}
        self.idx2word: list[str] = []

    def add_word(self, word: str) -> int:
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self) -> int:
        return len(self.idx2word)


class Corpus:
    def __init__(self, path: str) -> None:
        self.dictionary = Dictionary()
        self.train = self.tokenize(os.path.join(path, "train.txt"))
        self.valid = self.tokenize(os.path.join(path, "valid.txt"))

    def tokenize(self, path: str) -> torch.Tensor:
        with open(path, encoding="utf8") as f:
            for line in f:
                for word in [*line.split(), "<eos>"]:
                    self.dictionary.add_word(word)
        with open(path, encoding="utf8") as f:
            idss = []
            for line in f:
                ids = [self.dictionary.word2idx[w] for w in [*line.split(), "<eos>"]]
                idss.append(torch.tensor(ids, dtype=torch.int64))
            return torch.cat(idss)


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.2) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, inp: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        emb = self.drop(self.encoder(inp))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> tuple[torch.Tensor, torch.Tensor]:
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid)


def write_corpus(path: str, words: int, vocab: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    names = [f"w{i}" for i in range(vocab)]
    weights = [1.0 / (i + 1) for i in range(vocab)]
    for split, n in (("train.txt", words), ("valid.txt", words // 10)):
        with open(os.path.join(path, split), "w", encoding="utf8") as f:
            left = n
            while left > 0:
                k = min(left, rng.randint(5, 20))
                f.write(" ".join(rng.choices(names, weights, k=k)) + "\n")
                left -= k


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def repackage_hidden(h: object) -> object:
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)  # type: ignore[attr-defined]


def get_batch(source: torch.Tensor, i: int, bptt: int) -> tuple[torch.Tensor, torch.Tensor]:
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].view(-1)


def evaluate(model: RNNModel, data: torch.Tensor, bptt: int, bsz: int, criterion: nn.Module) -> float:
    model.eval()
    total = 0.0
    hidden: object = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, data.size(0) - 1, bptt):
            inp, targets = get_batch(data, i, bptt)
            output, hidden = model(inp, hidden)
            hidden = repackage_hidden(hidden)
            total += len(inp) * criterion(output, targets).item()
    return total / (len(data) - 1)


def train(model: RNNModel, data: torch.Tensor, args: argparse.Namespace, criterion: nn.Module) -> None:
    model.train()
    hidden: object = model.init_hidden(args.batch_size)
    for i in range(0, data.size(0) - 1, args.bptt):
        inp, targets = get_batch(data, i, args.bptt)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(inp, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-args.lr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emsize", type=int, default=64)
    parser.add_argument("--nhid", type=int, default=64)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=20.0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=20)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--words", type=int, default=60_000)
    parser.add_argument("--vocab", type=int, default=2000)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as data_dir:
        write_corpus(data_dir, args.words, args.vocab)
        corpus = Corpus(data_dir)
    train_data = batchify(corpus.train, args.batch_size)
    val_data = batchify(corpus.valid, 10)
    model = RNNModel(len(corpus.dictionary), args.emsize, args.nhid, args.nlayers)
    criterion = nn.NLLLoss()
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        train(model, train_data, args, criterion)
        val_loss = evaluate(model, val_data, args.bptt, 10, criterion)
        print(f"| end of epoch {epoch} | time {time.time() - t0:5.2f}s | valid ppl {math.exp(val_loss):8.2f}")


if __name__ == "__main__":
    main()
