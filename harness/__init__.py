"""MXNet 1.9.1's training harness on top of the executor: ``gx.nd`` (:mod:`.ndarray`),
``gx.io`` (:mod:`.io`), ``gx.recordio``, ``gx.init`` (:mod:`.initializer`),
``gx.optimizer``, ``gx.lr_scheduler``, ``gx.metric``, ``gx.callback``, ``gx.mod``
(:mod:`.module`) and ``gx.kv`` (:mod:`.kvstore`), with MXNet's names, signatures, defaults and
formulas. The harness depends on the core only (``tests/test_layering.py``)."""
