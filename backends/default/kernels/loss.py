"""Kernels of the loss family."""
