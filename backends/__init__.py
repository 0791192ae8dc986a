"""Backends: native kernels (default), ONNX Runtime regions (onnxrt), fused kernels (fused)."""
