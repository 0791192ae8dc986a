"""Kernels of the tensor family."""
