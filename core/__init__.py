"""graphexec's core, a stack of layers, bottom first: ``ir`` (errors, contexts, attribute
schemas, graph IR) and ``hookspecs``; ``plugins`` (the plugin manager); ``ops`` (operator
declarations); ``symbol`` (the Symbol API, JSON, .params); ``passes``; ``subgraph`` (the
subgraph API and partitioner); ``runtime`` (kernels, plans, executor, bind); ``startup``
(loads the plugins into the registries). Each layer imports only the ones below it."""
