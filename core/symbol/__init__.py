"""The symbol layer: the :class:`~.symbol.Symbol` API (variables, operator application,
composition, naming scopes), MXNet's symbol JSON (:mod:`.json_io`), the ``.params`` binary
(:mod:`.ndarray_io`) and checkpoints (:mod:`.model`). It builds on the IR and the operator
declarations; inference, partitioning and binding add their methods to Symbol from above.
Importing the package installs ``tojson`` / ``save`` / pickling (:mod:`.json_io`)."""
from .json_io import load, load_json
from .symbol import Group, Symbol, Variable, create_op_symbol, var

__all__ = ["Symbol", "Variable", "var", "Group", "create_op_symbol", "load", "load_json"]
