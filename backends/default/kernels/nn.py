"""Kernels of the nn family."""
