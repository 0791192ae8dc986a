"""``gx.rnn.encode_sentences`` and ``gx.rnn.BucketSentenceIter``: MXNet 1.9.1's helpers for
language models — word ids, and batches of sentences grouped into length buckets (each batch
carries its ``bucket_key`` for a BucketingModule; labels are the inputs shifted by one)."""
from __future__ import annotations

import bisect
import logging
import random
from typing import Sequence

import numpy as np

from ..io.base import DataBatch, DataDesc, DataError, DataIter
from ..ndarray.creation import array

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences: Sequence[Sequence[str]], vocab: dict | None = None,
                     invalid_label: int = -1, invalid_key: str = "\n", start_label: int = 0,
                     unknown_token: str | None = None) -> tuple[list[list[int]], dict]:
    """Sentences as lists of word ids, and the vocabulary (built when not given; ids start
    at ``start_label`` and skip ``invalid_label``)."""
    new_vocab = vocab is None
    vocab = {invalid_key: invalid_label} if new_vocab else vocab
    idx, coded_all = start_label, []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise DataError(f"Unknown token {word}")
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        coded_all.append(coded)
    return coded_all, vocab


class BucketSentenceIter(DataIter):
    """Batches of ``batch_size`` sentences of one bucket length (padded with
    ``invalid_label``); sentences longer than the largest bucket are dropped. Buckets
    default to every length with at least ``batch_size`` sentences. The batch order is
    shuffled with Python's ``random``, the sentences with numpy's generator, as MXNet's."""

    def __init__(self, sentences: Sequence[Sequence[int]], batch_size: int,
                 buckets: list[int] | None = None, invalid_label: int = -1,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", layout: str = "NT"):
        super().__init__(batch_size)
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [n for n, c in enumerate(counts) if c >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise DataError(f"BucketSentenceIter: no bucket holds {batch_size} sentences")
        grouped: list[list] = [[] for _ in buckets]
        discarded = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                discarded += 1
                continue
            row = np.full(buckets[b], invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            grouped[b].append(row)
        if discarded:
            logging.warning("discarded %d sentences longer than the largest bucket.", discarded)
        self.buckets = [n for n, g in zip(buckets, grouped) if g]
        self.data = [np.asarray(g, dtype=dtype) for g in grouped if g]
        self.data_name, self.label_name = data_name, label_name
        self.dtype, self.invalid_label, self.layout = dtype, invalid_label, layout
        self.major_axis = layout.find("N")
        if self.major_axis not in (0, 1):
            raise DataError(f"Invalid layout {layout}: Must by NT (batch major) or TN (time "
                            f"major)")
        self.default_bucket_key = max(self.buckets)
        shape = ((batch_size, self.default_bucket_key) if self.major_axis == 0
                 else (self.default_bucket_key, batch_size))
        self.provide_data = [DataDesc(data_name, shape, layout=layout)]
        self.provide_label = [DataDesc(label_name, shape, layout=layout)]
        self.idx = [(i, j) for i, rows in enumerate(self.data)
                    for j in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def reset(self) -> None:
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(array(rows, dtype=self.dtype))
            self.ndlabel.append(array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(self.data_name, data.shape, layout=self.layout)],
                         provide_label=[DataDesc(self.label_name, label.shape,
                                                 layout=self.layout)])

