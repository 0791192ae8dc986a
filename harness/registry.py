"""Name registries for the harness's pluggable classes (initializers, optimizers, metrics),
with MXNet's ``mx.registry`` conventions: names are the lower-cased class names plus
aliases; ``create`` takes an instance (returned as is), a name and keyword arguments, or
the JSON text ``dumps()`` writes (``'["xavier", {"magnitude": 2}]'``)."""
from __future__ import annotations

import difflib
import json
from typing import Any, Callable

from graphexec.core.ir.errors import GraphexecError

__all__ = ["Registry", "UnknownNameError"]


class UnknownNameError(GraphexecError, ValueError):
    """A registry has no class of that name."""


class Registry:
    """Classes derived from ``base`` by name (``kind`` names them in messages)."""

    def __init__(self, base: type, kind: str):
        self.base, self.kind = base, kind
        self._classes: dict[str, type] = {}

    def register(self, klass: type, name: str | None = None) -> type:
        """Register ``klass`` under ``name`` (its lower-cased class name by default)."""
        if not (isinstance(klass, type) and issubclass(klass, self.base)):
            raise TypeError(f"can only register subclasses of {self.base.__name__}, got {klass!r}")
        self._classes[(name or klass.__name__).lower()] = klass
        return klass

    def alias(self, *names: str) -> Callable[[type], type]:
        """Class decorator registering the class under more names."""
        def deco(klass: type) -> type:
            for name in names:
                self.register(klass, name)
            return klass
        return deco

    def names(self) -> list[str]:
        return sorted(self._classes)

    def get(self, name: str) -> type:
        klass = self._classes.get(name.lower())
        if klass is None:
            close = difflib.get_close_matches(name.lower(), self._classes, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint} (registered: "
                                   f"{', '.join(self.names())})")
        return klass

    def create(self, spec: Any, *args: Any, **kwargs: Any) -> Any:
        """An instance from ``spec``: an instance of the base (returned unchanged), a
        registered name, or JSON ``[name, kwargs]``."""
        if isinstance(spec, self.base):
            if args or kwargs:
                raise TypeError(f"{self.kind} instance {spec!r} given with extra arguments")
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"{self.kind} must be a name or a {self.base.__name__}, got "
                            f"{type(spec).__name__}")
        if spec.startswith("["):
            if args or kwargs:
                raise TypeError(f"{self.kind} given as JSON takes no other arguments")
            try:
                spec, kwargs = json.loads(spec)
            except (ValueError, TypeError):
                raise UnknownNameError(f"{self.kind} JSON {spec!r} is not [name, kwargs]") from None
        return self.get(spec)(*args, **kwargs)
