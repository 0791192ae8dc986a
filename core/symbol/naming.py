"""Automatic node names (MXNet's NameManager / Prefix) and attribute scopes (AttrScope)."""
from __future__ import annotations

import threading
from typing import Any

from ..ir.errors import ArgumentValueError

__all__ = ["NameManager", "Prefix", "AttrScope"]

_local = threading.local()


class NameManager:
    """Gives unique names ``<hint><k>`` from per-hint counters.

    Use ``with NameManager():`` to start counting from zero (reproducible names)."""

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}
        self._old: NameManager | None = None

    def get(self, name: str | None, hint: str) -> str:
        """``name`` if given, else the next automatic name for ``hint``."""
        if name:
            return name
        k = self._counter.get(hint, 0)
        self._counter[hint] = k + 1
        return f"{hint}{k}"

    def __enter__(self) -> "NameManager":
        self._old = NameManager.current()
        _local.name_manager = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.name_manager = self._old

    @staticmethod
    def current() -> "NameManager":
        cur = getattr(_local, "name_manager", None)
        if cur is None:
            cur = _local.name_manager = NameManager()
        return cur


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` before every name, given or automatic."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def get(self, name: str | None, hint: str) -> str:
        return self._prefix + super().get(name, hint)


class AttrScope:
    """Attributes (string values) attached to every symbol created inside the scope, stored
    under the names given, as MXNet 1.9.1 does; MXNet's hidden keys become ``__key__`` when a
    symbol is created (``with AttrScope(ctx_group='dev1'):`` sets ``__ctx_group__``)."""

    def __init__(self, **kwargs: str) -> None:
        for value in kwargs.values():
            if not isinstance(value, str):
                raise ArgumentValueError("AttrScope values must be strings")
        self._attr = dict(kwargs)
        self._old: AttrScope | None = None

    def get(self, attr: dict[str, str] | None) -> dict[str, str]:
        """This scope's attributes updated with ``attr``."""
        if not self._attr:
            return dict(attr) if attr else {}
        out = dict(self._attr)
        if attr:
            out.update(attr)
        return out

    def __enter__(self) -> "AttrScope":
        self._old = AttrScope.current()
        merged = dict(self._old._attr)
        merged.update(self._attr)
        self._attr = merged
        _local.attr_scope = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.attr_scope = self._old

    @staticmethod
    def current() -> "AttrScope":
        cur = getattr(_local, "attr_scope", None)
        if cur is None:
            cur = _local.attr_scope = AttrScope()
        return cur

