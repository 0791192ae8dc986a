"""Op converters, one module per operator family; each registers its functions in
``convert.CONVERTERS`` when imported. Importing this package loads them all, so
``from .converters import CONVERTERS`` gives the complete table."""
from ..convert import CONVERTERS, Builder, ConvertCall, Converter, onnx_dtype, supported_dtype
from . import conv, elemwise, indexing, nn, ranges, reduce, rnn, sequence, sorting, tensor  # noqa: F401,E501 - they register
from . import misc  # noqa: F401,E402 - registers the misc / loss / contrib converters

__all__ = ["CONVERTERS", "Converter", "ConvertCall", "Builder", "onnx_dtype", "supported_dtype"]
