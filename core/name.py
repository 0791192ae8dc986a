"""``gx.name``: MXNet's naming scopes (NameManager, Prefix) and AttrScope."""
from .naming import AttrScope, NameManager, Prefix

__all__ = ["NameManager", "Prefix", "AttrScope"]
