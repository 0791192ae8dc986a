"""onnxrt backend: regions exported to ONNX Runtime. Not registered as a plugin yet: it is built
in the onnxrt issue (see README, "Status")."""
