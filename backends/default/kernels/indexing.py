"""Kernels of the indexing family."""
