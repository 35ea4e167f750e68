"""The axis names of the TPU core_maps being traced (`tpu.TensorCoreMesh`):
their lanes are the cores of one device, which share memory and exchange
data (a neutral module: `core` and `tpu` both read it)."""

core_axes = set()
