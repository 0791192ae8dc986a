"""BucketingExecutor: one executor per bucket key (e.g. sequence length) sharing parameters
and memory with the default bucket, as MXNet's BucketingModule + ``_bind_exec`` do."""
from __future__ import annotations

from typing import Any, Callable, Hashable

from ..ir.context import Context, cpu
from ..ir.errors import BindError
from ..symbol.symbol import Symbol
from .executor import Executor

__all__ = ["BucketingExecutor"]


class BucketingExecutor:
    """Executors for the symbols ``sym_gen(bucket_key)`` returns, created on demand.

    The default bucket is bound first (:meth:`bind`); every other bucket is bound with
    ``simple_bind(shared_exec=<default>, shared_arg_names=<parameters>, shared_buffer=...)``
    so parameters and their gradients are the default bucket's arrays, data arrays are
    carved out of one shared buffer, and internal memory comes from the default bucket's
    pool. Bind the default bucket with the largest shapes for the best memory reuse.

    >>> be = BucketingExecutor(lambda n: unrolled_lstm(n), default_bucket_key=10)
    >>> be.bind(data=(32, 10, 8), label=(32, 10))
    >>> be.forward(5, is_train=True, data=batch5, label=labels5); be.backward()
    """

    def __init__(self, sym_gen: Callable[[Hashable], Symbol], default_bucket_key: Hashable,
                 ctx: Context | None = None, grad_req: Any = "write",
                 type_dict: dict | None = None, backend: Any = None,
                 backend_options: dict | None = None):
        self.sym_gen = sym_gen
        self.default_bucket_key = default_bucket_key
        self.ctx = ctx or cpu()
        self.grad_req = grad_req
        self.type_dict = type_dict
        self.backend, self.backend_options = backend, backend_options
        self.shared_buffer: dict = {}
        self.execs: dict[Hashable, Executor] = {}
        self.param_names: list[str] = []
        self.curr_key: Hashable = default_bucket_key

    def bind(self, **data_shapes: tuple) -> Executor:
        """Bind the default bucket; the arguments not in ``data_shapes`` are parameters."""
        sym = self._symbol(self.default_bucket_key)
        self.param_names = [n for n in sym.list_arguments() if n not in data_shapes]
        exe = self._simple_bind(sym, None, data_shapes)
        self.execs[self.default_bucket_key] = exe
        return exe

    def switch_bucket(self, bucket_key: Hashable, **data_shapes: tuple) -> Executor:
        """The executor of ``bucket_key`` (bound on first use with ``data_shapes``)."""
        if self.default_bucket_key not in self.execs:
            raise BindError("bind() the default bucket before switching buckets")
        exe = self.execs.get(bucket_key)
        if exe is None:
            if not data_shapes:
                raise BindError(f"bucket {bucket_key!r} is not bound yet: give its data shapes")
            sym = self._symbol(bucket_key)
            missing = [n for n in self.param_names if n not in sym.list_arguments()]
            if missing:
                raise BindError(f"bucket {bucket_key!r}: the symbol lacks parameters {missing} "
                                f"of the default bucket")
            exe = self._simple_bind(sym, self.execs[self.default_bucket_key], data_shapes)
            self.execs[bucket_key] = exe
        self.curr_key = bucket_key
        return exe

    def forward(self, bucket_key: Hashable, is_train: bool = False, **inputs: Any) -> list:
        """Switch to ``bucket_key`` (binding it from the inputs' shapes) and run forward."""
        shapes = {n: tuple(a.shape) for n, a in inputs.items()}
        return self.switch_bucket(bucket_key, **shapes).forward(is_train=is_train, **inputs)

    def backward(self, out_grads: Any = None) -> None:
        """Backward of the current bucket; gradients land in the shared parameter buffers."""
        self.execs[self.curr_key].backward(out_grads)

    @property
    def arg_params(self) -> dict[str, Any]:
        """Parameter name -> array (shared by every bucket)."""
        default = self.execs[self.default_bucket_key]
        return {n: default.arg_dict[n] for n in self.param_names}

    @property
    def grad_params(self) -> dict[str, Any]:
        default = self.execs[self.default_bucket_key]
        return {n: default.grad_dict[n] for n in self.param_names}

    def _symbol(self, key: Hashable) -> Symbol:
        sym = self.sym_gen(key)
        if not isinstance(sym, Symbol):
            raise BindError(f"sym_gen({key!r}) must return a Symbol, got {type(sym).__name__}")
        return sym

    def _simple_bind(self, sym: Symbol, shared: Executor | None, shapes: dict) -> Executor:
        names = sym.list_arguments()
        if isinstance(self.grad_req, str):
            reqs = {n: (self.grad_req if n in self.param_names else "null") for n in names}
        else:
            reqs = {n: r for n, r in dict(self.grad_req).items() if n in names}
        return sym.simple_bind(self.ctx, grad_req=reqs, type_dict=self.type_dict,
                               shared_exec=shared, shared_arg_names=self.param_names,
                               shared_buffer=self.shared_buffer, backend=self.backend,
                               backend_options=self.backend_options, **shapes)
