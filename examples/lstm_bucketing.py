"""A bucketed LSTM language model the MXNet 1.x way (MXNet's example/rnn/bucketing):
sentences of a small synthetic grammar, encode_sentences, BucketSentenceIter, a stacked
LSTMCell unrolled per bucket length, BucketingModule.fit with Perplexity.

    python examples/lstm_bucketing.py [--num-epoch 3]

Prints 'RESULT perplexity=<validation perplexity> first=<after the first epoch>'.
"""
import argparse
import logging
import random

import numpy as np

import graphexec as mx

WORDS = ['the', 'a', 'cat', 'dog', 'bird', 'sees', 'likes', 'chases', 'big', 'small',
         'red', 'old', 'and', 'then', 'runs', 'sleeps']


def sentences(count, rng):
    """Sentences of a small grammar: article [adjective] noun verb article noun ..."""
    out = []
    for _ in range(count):
        words = []
        for clause in range(rng.randint(1, 4)):
            if clause:
                words.append(['and', 'then'][rng.randint(2)])
            words += [WORDS[rng.randint(2)]] + ([WORDS[8 + rng.randint(4)]]
                                                if rng.rand() < 0.5 else [])
            words += [WORDS[2 + rng.randint(3)], WORDS[5 + rng.randint(3)]]
            words += [WORDS[rng.randint(2)], WORDS[2 + rng.randint(3)]]
        out.append(words)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--num-epoch', type=int, default=3)
    ap.add_argument('--num-hidden', type=int, default=64)
    ap.add_argument('--num-embed', type=int, default=32)
    ap.add_argument('--num-layers', type=int, default=2)
    ap.add_argument('--batch-size', type=int, default=32)
    ap.add_argument('--num-sentences', type=int, default=2000)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    rng = np.random.RandomState(0)
    random.seed(0)  # BucketSentenceIter shuffles its buckets with Python's random, as MXNet's
    np.random.seed(0)
    mx.random.seed(0)

    buckets = [7, 14, 21, 28]
    invalid_label = 0
    train_sent, vocab = mx.rnn.encode_sentences(sentences(args.num_sentences, rng), start_label=1,
                                                invalid_label=invalid_label)
    val_sent, _ = mx.rnn.encode_sentences(sentences(args.num_sentences // 5, rng), vocab=vocab)
    train = mx.rnn.BucketSentenceIter(train_sent, args.batch_size, buckets=buckets,
                                      invalid_label=invalid_label)
    val = mx.rnn.BucketSentenceIter(val_sent, args.batch_size, buckets=buckets,
                                    invalid_label=invalid_label)

    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=args.num_hidden, prefix='lstm_l%d_' % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        embed = mx.sym.Embedding(data=data, input_dim=len(vocab), output_dim=args.num_embed,
                                 name='embed')
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, args.num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=len(vocab), name='pred')
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name='softmax')
        return pred, ('data',), ('softmax_label',)

    model = mx.mod.BucketingModule(sym_gen=sym_gen, default_bucket_key=train.default_bucket_key,
                                   context=mx.cpu())
    scores = []
    model.fit(train_data=train, eval_data=val,
              eval_metric=mx.metric.Perplexity(invalid_label),
              optimizer='sgd', optimizer_params={'learning_rate': 0.1, 'momentum': 0.9,
                                                 'wd': 1e-5, 'clip_gradient': 5.0},
              initializer=mx.init.Xavier(factor_type='in', magnitude=2.34),
              num_epoch=args.num_epoch,
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 20),
              eval_end_callback=lambda param: scores.append(param.eval_metric.get()[1]))
    print('RESULT perplexity=%.3f first=%.3f buckets=%d' % (scores[-1], scores[0],
                                                            len(model._buckets)))


if __name__ == '__main__':
    main()
