"""``gx.rnn``: MXNet 1.9.1's symbolic recurrent cells (``RNNCell``, ``LSTMCell``,
``GRUCell``, ``SequentialRNNCell``, ``DropoutCell``, ``BidirectionalCell``, ``FusedRNNCell``
with ``unpack_weights`` / ``pack_weights`` / ``unfuse``, ``ZoneoutCell``, ``ResidualCell``),
``encode_sentences`` and
``BucketSentenceIter`` for bucketed language models.

>>> stack = gx.rnn.SequentialRNNCell()
>>> stack.add(gx.rnn.LSTMCell(num_hidden=200, prefix='lstm_l0_'))
>>> outputs, states = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
"""
from .fused_cell import BidirectionalCell, FusedRNN, FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .modifier_cell import ModifierCell, ResidualCell, ZoneoutCell
from .rnn_cell import (BaseRNNCell, DropoutCell, GRUCell, LSTMCell, RNNCell, RNNError,
                       RNNParams, SequentialRNNCell)

__all__ = ["BaseRNNCell", "RNNParams", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "DropoutCell", "BidirectionalCell", "FusedRNNCell", "FusedRNN", "RNNError",
           "ModifierCell", "ZoneoutCell", "ResidualCell", "encode_sentences",
           "BucketSentenceIter"]
