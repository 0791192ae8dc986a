"""The graph IR, the bottom layer of the core: errors (:mod:`.errors`), contexts
(:mod:`.context`), attribute schemas (:mod:`.attrs`), nodes, entries and graphs
(:mod:`.graph`) and the seeded random generator (:mod:`.random`). It imports nothing of
graphexec above it."""
