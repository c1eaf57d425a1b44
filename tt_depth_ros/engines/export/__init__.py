"""Export of the DA3 torch networks to portable files for edge runtimes (ONNX, LiteRT).

graph.py holds what every export shares (the traced graph, outputs and units, the seeded export
input, weights and their hash, parity figures); onnx_da3.py exports to ONNX and checks with
onnxruntime; litert_da3.py converts with litert-torch and checks with the ai-edge-litert
interpreter (XNNPACK); tflite_ops.py reads a .tflite file's operators and checks them statically
against the mobile GPU delegate; sidecar.py the JSON written beside each file (model, size,
preprocessing, outputs and units, hashes, versions, parity); size.py the `HxW` export size. May
import: engines (torch builders, the onnxruntime engine), models, geometry; torch, onnx and the
LiteRT packages only inside graph.py / onnx_da3.py / litert_da3.py / tflite_ops.py (sidecar.py and
size.py stay torch-free for the onnxruntime engine).
"""
