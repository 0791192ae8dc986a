"""fused backend: pointwise fusion with generated kernels. Not registered as a plugin yet: it is
built in the fused issue (see README, "Status")."""
