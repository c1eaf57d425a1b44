"""Export of the DA3 torch networks to portable files for edge runtimes (ONNX today).

onnx_da3.py exports a DA3 model at one fixed size with torch.onnx and measures its parity with
the torch engine; sidecar.py the JSON written beside each file (model, size, preprocessing,
outputs and units, hashes, versions, parity); size.py the `HxW` export size. May import:
engines (torch builders, the onnxruntime engine), models, geometry; torch and onnx inside
onnx_da3.py only (sidecar.py and size.py stay torch-free for the onnxruntime engine).
"""
