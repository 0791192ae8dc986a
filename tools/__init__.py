"""Tools on top of the core and the backends: A/B comparison of partitioning strategies, the
model zoo, plots and the HTML report (:mod:`.compare`), and the ``graphexec`` command line
(:mod:`.cli`). Nothing in the core or the backends imports them."""
