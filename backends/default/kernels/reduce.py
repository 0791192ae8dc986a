"""Kernels of the reduce family."""
