"""ONNX op importers, one module per op family; each registers its functions in
``importing.IMPORTERS`` when imported. Importing this package loads them all."""
from . import act, conv, loss, nn, ops, reduce, resize, shape, tensor  # noqa: F401 - they register
