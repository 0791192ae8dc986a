"""MXNet 1.x's "Handwritten digit recognition" tutorial, step by step as users copied it
(symbols, Module.fit, predict on an iterator without labels, score with a metric object,
prediction from a namedtuple batch after Module.load), on synthetic MNIST-like data.

    python examples/mnist_tutorial.py          # or with 'import mxnet as mx': graphexec run
"""
import logging
import os
import tempfile
from collections import namedtuple

import numpy as np

import graphexec as mx
import mnist_like

logging.getLogger().setLevel(logging.DEBUG)
mx.random.seed(42)
np.random.seed(42)
train_data, train_label, test_data, test_label = mnist_like.load(num_train=6000, num_test=1000)
mnist = {'train_data': train_data, 'train_label': train_label,
         'test_data': test_data, 'test_label': test_label}

batch_size = 100
train_iter = mx.io.NDArrayIter(mnist['train_data'], mnist['train_label'], batch_size,
                               shuffle=True)
val_iter = mx.io.NDArrayIter(mnist['test_data'], mnist['test_label'], batch_size)

data = mx.sym.var('data')
data = mx.sym.flatten(data=data)
fc1 = mx.sym.FullyConnected(data=data, num_hidden=128)
act1 = mx.sym.Activation(data=fc1, act_type="relu")
fc2 = mx.sym.FullyConnected(data=act1, num_hidden=64)
act2 = mx.sym.Activation(data=fc2, act_type="relu")
fc3 = mx.sym.FullyConnected(data=act2, num_hidden=10)
mlp = mx.sym.SoftmaxOutput(data=fc3, name='softmax')

mlp_model = mx.mod.Module(symbol=mlp, context=mx.cpu())
mlp_model.fit(train_iter,
              eval_data=val_iter,
              optimizer='sgd',
              optimizer_params={'learning_rate': 0.1},
              initializer=mx.init.Xavier(),
              eval_metric='acc',
              batch_end_callback=mx.callback.Speedometer(batch_size, 100),
              num_epoch=5)

test_iter = mx.io.NDArrayIter(mnist['test_data'], None, batch_size)
prob = mlp_model.predict(test_iter)
assert prob.shape == (1000, 10)

test_iter = mx.io.NDArrayIter(mnist['test_data'], mnist['test_label'], batch_size)
acc = mx.metric.Accuracy()
mlp_model.score(test_iter, acc)
print(acc)
assert acc.get()[1] > 0.9, "Achieved accuracy (%f) is lower than expected (0.9)" % acc.get()[1]

# the inference idiom: reload the checkpoint, bind for one image, feed a namedtuple batch
Batch = namedtuple('Batch', ['data'])
with tempfile.TemporaryDirectory() as folder:
    prefix = os.path.join(folder, 'mlp')
    mlp_model.save_checkpoint(prefix, 5)
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 5)
mod = mx.mod.Module(symbol=sym, context=mx.cpu(), label_names=None)
mod.bind(for_training=False, data_shapes=[('data', (1, 1, 28, 28))],
         label_shapes=mod._label_shapes)
mod.set_params(arg_params, aux_params, allow_missing=True)
hits = 0
for k in range(50):
    mod.forward(Batch([mx.nd.array(test_data[k:k + 1])]))
    hits += int(mod.get_outputs()[0].asnumpy()[0].argmax() == test_label[k])
print('RESULT accuracy=%.4f single=%d/50' % (acc.get()[1], hits))
