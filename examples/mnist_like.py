"""Synthetic MNIST-like data for the example scripts: 28x28 grey images of 10 classes, each
class a random pattern of strokes, shifted, scaled and noised per image; numpy only and
seeded, so graphexec and MXNet train on the same arrays."""
import numpy as np

SHAPE = (1, 28, 28)


def _templates(rng):
    yy, xx = np.mgrid[0:28, 0:28]
    templates = []
    for _ in range(10):
        img = np.zeros((28, 28))
        for _ in range(4):
            cy, cx = rng.uniform(6, 22, 2)
            sy, sx = rng.uniform(1.0, 4.5, 2)
            img += np.exp(-((yy - cy) ** 2 / (2 * sy ** 2) + (xx - cx) ** 2 / (2 * sx ** 2)))
        templates.append(img / img.max())
    return np.stack(templates)


def _sample(rng, templates, n):
    labels = rng.randint(0, 10, n)
    shifts = rng.randint(-3, 4, (n, 2))
    images = np.stack([np.roll(templates[c], tuple(s), axis=(0, 1))
                       for c, s in zip(labels, shifts)])
    images = images * rng.uniform(0.5, 1.2, (n, 1, 1)) + rng.normal(0, 0.3, images.shape)
    return (np.clip(images, 0, 1).astype(np.float32).reshape((n,) + SHAPE),
            labels.astype(np.float32))


def load(num_train=6000, num_test=1000, seed=42):
    """(train_x, train_y, test_x, test_y); images (n, 1, 28, 28) in [0, 1], float labels."""
    rng = np.random.RandomState(seed)
    templates = _templates(rng)
    train_x, train_y = _sample(rng, templates, num_train)
    test_x, test_y = _sample(rng, templates, num_test)
    return train_x, train_y, test_x, test_y
