"""graphexec core: graph IR, symbols, operator declarations, passes, executor, plugins."""
