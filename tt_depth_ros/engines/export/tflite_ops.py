"""Operator inventory of a .tflite file and a static check against LiteRT's mobile GPU delegate.

Why static: no phone GPU here, so the file itself is read (its flatbuffer, through the schema
ai-edge-litert ships) for what the GPU delegate rejects or splits off to the CPU:

* operators it has no kernel for: GATHER_ND, TRANSPOSE_CONV (as the issue lists it: the DA3 heads'
  kernel == stride upsamplers are rewritten, layers/stride_upsample.py), BROADCAST_TO, and the
  64-bit or non-float tensor types that would come with index arithmetic;
* tensors over 4-D (the delegate's tensors are at most BHWC);
* bilinear resizes with align_corners=True: the delegate's resize parser reads align_corners and
  half_pixel_centers and takes both, so they are allowed but counted and stated (the DA3 heads
  need align_corners=True to be exact).

It also runs LiteRT's own model analyzer with its GPU-compatibility pass and keeps its verdict.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

GPU_REJECTED_OPS = ('GATHER_ND', 'TRANSPOSE_CONV', 'BROADCAST_TO')
MAX_RANK = 4
_ALLOWED_TYPES = ('FLOAT32', 'FLOAT16', 'INT32')
ANALYZER_OK = 'looks compatible with GPU delegate'


class GpuCheck(NamedTuple):
    """What `gpu_delegate_check` found; `passed` when nothing the delegate rejects is there."""

    operators: dict[str, int]
    max_rank: int
    over_4d: list[str]
    rejected_ops: dict[str, int]
    tensor_types: list[str]
    bad_types: list[str]
    resize_align_corners: int
    float16_weights: str
    analyzer_verdict: str
    passed: bool

    def as_dict(self) -> dict:
        """JSON-ready form (the sidecar's `gpu_delegate_check`)."""
        return self._asdict()


def _names(enum_cls) -> dict[int, str]:
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith('_')}


def _analyzer_verdict(path: Path) -> str:
    """The GPU line of LiteRT's model analyzer (gpu_compatibility=True), '' if it says nothing."""
    from ai_edge_litert import _pywrap_analyzer_wrapper as analyzer

    text = analyzer.ModelAnalyzer(str(path), True, True)
    lines = [ln.strip() for ln in text.splitlines() if 'GPU' in ln and 'delegate' in ln]
    return lines[0] if lines else ''


def gpu_delegate_check(path: str | Path) -> GpuCheck:
    """Read `path` (.tflite) and check it statically (module docstring)."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    path = Path(path)
    model = flatbuffer_utils.read_model(str(path))
    op_names = _names(schema.BuiltinOperator)
    type_names = _names(schema.TensorType)
    ops: dict[str, int] = {}
    over, types, align = [], set(), 0
    rank = weighted = half = 0
    for g in model.subgraphs:
        dequantized = {}   # tensor -> source tensor type of the DEQUANTIZE that makes it
        for op in g.operators:
            code = model.operatorCodes[op.opcodeIndex]
            dequantize = schema.BuiltinOperator.DEQUANTIZE
            if max(code.builtinCode, code.deprecatedBuiltinCode) == dequantize:
                dequantized[int(op.outputs[0])] = g.tensors[int(op.inputs[0])].type
        for op in g.operators:
            code = model.operatorCodes[op.opcodeIndex]
            name = op_names.get(max(code.builtinCode, code.deprecatedBuiltinCode),
                                f'CUSTOM:{code.customCode}')
            ops[name] = ops.get(name, 0) + 1
            if name == 'RESIZE_BILINEAR' and getattr(op.builtinOptions, 'alignCorners', False):
                align += 1
            if name in ('CONV_2D', 'FULLY_CONNECTED', 'DEPTHWISE_CONV_2D'):
                weighted += 1
                half += dequantized.get(int(op.inputs[1])) == schema.TensorType.FLOAT16
        for t in g.tensors:
            shape = [] if t.shape is None else list(t.shape)
            rank = max(rank, len(shape))
            if len(shape) > MAX_RANK:
                label = t.name.decode() if isinstance(t.name, bytes) else str(t.name)
                over.append(f'{label[-80:]} {shape}')
            types.add(type_names.get(t.type, str(t.type)))
    rejected = {k: v for k, v in ops.items() if k in GPU_REJECTED_OPS or k.startswith('CUSTOM')}
    bad_types = sorted(t for t in types if t not in _ALLOWED_TYPES)
    verdict = _analyzer_verdict(path)
    passed = not rejected and not over and not bad_types and ANALYZER_OK in verdict
    return GpuCheck(dict(sorted(ops.items())), rank, over, rejected, sorted(types), bad_types,
                    align, f'{half} of {weighted} CONV_2D / FULLY_CONNECTED weights', verdict,
                    passed)
