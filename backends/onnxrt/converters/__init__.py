"""Op converters, one module per operator family; each registers its functions in
``convert.CONVERTERS`` when imported. Importing this package loads them all, so
``from .converters import CONVERTERS`` gives the complete table."""
from ..convert import (CONVERTERS, NOT_EXPRESSED, Builder, ConvertCall, Converter, onnx_dtype,
                       supported_dtype)
from . import conv, detection, elemwise, indexing, nn, ranges, reduce, rnn, sequence, sorting, tensor  # noqa: F401,E501 - they register
from . import geometry, legacy, linalg, misc, norm, pdf, resample  # noqa: F401 - they register

__all__ = ["CONVERTERS", "NOT_EXPRESSED", "Converter", "ConvertCall", "Builder", "onnx_dtype",
           "supported_dtype"]
