"""Train an MLP or LeNet on synthetic MNIST-like data the MXNet 1.x way: NDArrayIter,
Module.fit with SGD, Xavier, accuracy and Speedometer, then score, save_checkpoint,
Module.load and predict.

    python examples/train_mnist_like.py --network mlp
    python examples/train_mnist_like.py --network lenet --contexts 2 --kvstore local
    mpiexec -n 2 python examples/train_mnist_like.py --kvstore dist_sync

The same file runs on MXNet 1.9.1 with 'import mxnet as mx' in place of the graphexec
import (or unchanged with 'graphexec run' when it imports mxnet). It prints one line
'RESULT accuracy=... reloaded=... epoch_seconds=...'.
"""
import argparse
import logging
import os
import tempfile
import time

import numpy as np

import graphexec as mx
import mnist_like


def mlp():
    data = mx.sym.Variable('data')
    net = mx.sym.Flatten(data)
    net = mx.sym.FullyConnected(net, name='fc1', num_hidden=128)
    net = mx.sym.Activation(net, name='relu1', act_type='relu')
    net = mx.sym.FullyConnected(net, name='fc2', num_hidden=64)
    net = mx.sym.Activation(net, name='relu2', act_type='relu')
    net = mx.sym.FullyConnected(net, name='fc3', num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name='softmax')


def lenet():
    data = mx.sym.Variable('data')
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name='conv1')
    net = mx.sym.Activation(net, act_type='tanh')
    net = mx.sym.Pooling(net, pool_type='max', kernel=(2, 2), stride=(2, 2))
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50, name='conv2')
    net = mx.sym.Activation(net, act_type='tanh')
    net = mx.sym.Pooling(net, pool_type='max', kernel=(2, 2), stride=(2, 2))
    net = mx.sym.Flatten(net)
    net = mx.sym.FullyConnected(net, num_hidden=500, name='fc1')
    net = mx.sym.Activation(net, act_type='tanh')
    net = mx.sym.FullyConnected(net, num_hidden=10, name='fc2')
    return mx.sym.SoftmaxOutput(net, name='softmax')


class EpochTimer:
    """Epoch-end callback recording how long each epoch of fit took."""

    def __init__(self):
        self.start, self.seconds = time.time(), []

    def __call__(self, epoch, symbol, arg_params, aux_params):
        now = time.time()
        self.seconds.append(now - self.start)
        self.start = now


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--network', choices=['mlp', 'lenet'], default='mlp')
    ap.add_argument('--num-epoch', type=int, default=4)
    ap.add_argument('--batch-size', type=int, default=100)
    ap.add_argument('--lr', type=float, default=0.1)
    ap.add_argument('--contexts', type=int, default=1, help='cpu contexts to train on')
    ap.add_argument('--kvstore', default='local')
    ap.add_argument('--num-train', type=int, default=6000)
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    np.random.seed(args.seed)
    mx.random.seed(args.seed)

    train_x, train_y, test_x, test_y = mnist_like.load(num_train=args.num_train)
    kv = mx.kv.create(args.kvstore) if args.kvstore.startswith('dist') else args.kvstore
    if not isinstance(kv, str):  # each worker trains on its share of the data
        train_x = train_x[kv.rank::kv.num_workers]
        train_y = train_y[kv.rank::kv.num_workers]
    train = mx.io.NDArrayIter(train_x, train_y, args.batch_size, shuffle=True)
    test = mx.io.NDArrayIter(test_x, test_y, args.batch_size)

    contexts = [mx.cpu(i) for i in range(args.contexts)]
    mod = mx.mod.Module(mlp() if args.network == 'mlp' else lenet(), context=contexts)
    timer = EpochTimer()
    mod.fit(train, eval_data=test, kvstore=kv, optimizer='sgd',
            optimizer_params={'learning_rate': args.lr, 'momentum': 0.9, 'wd': 1e-4},
            initializer=mx.init.Xavier(magnitude=2.24), eval_metric='acc',
            batch_end_callback=mx.callback.Speedometer(args.batch_size, 20),
            epoch_end_callback=timer, num_epoch=args.num_epoch)
    accuracy = mod.score(test, 'acc')[0][1]

    with tempfile.TemporaryDirectory() as folder:
        prefix = os.path.join(folder, args.network)
        mod.save_checkpoint(prefix, args.num_epoch)
        loaded = mx.mod.Module.load(prefix, args.num_epoch, context=contexts)
        loaded.bind(data_shapes=test.provide_data, label_shapes=test.provide_label,
                    for_training=False)
        probs = loaded.predict(test).asnumpy()
    reloaded = float((probs.argmax(axis=1) == test_y).mean())
    print('RESULT accuracy=%.4f reloaded=%.4f epoch_seconds=%s' % (
        accuracy, reloaded, ','.join('%.3f' % s for s in timer.seconds)))


if __name__ == '__main__':
    main()
