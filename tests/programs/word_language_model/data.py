"""Dictionary and Corpus as in pytorch/examples word_language_model/data.py, reading a corpus generated on the
fly (a deterministic word stream) instead of Wikitext-2 files."""

import random

import torch


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def generated_lines(n_lines, seed):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(200)]
    for _ in range(n_lines):
        yield " ".join(rng.choice(words) for _ in range(rng.randint(5, 15)))


class Corpus:
    def __init__(self):
        self.dictionary = Dictionary()
        self.train = self.tokenize(generated_lines(300, 1))
        self.valid = self.tokenize(generated_lines(40, 2))
        self.test = self.tokenize(generated_lines(40, 3))

    def tokenize(self, lines):
        idss = []
        for line in lines:
            words = [*line.split(), "<eos>"]
            idss.append(torch.tensor([self.dictionary.add_word(w) for w in words], dtype=torch.int64))
        return torch.cat(idss)
