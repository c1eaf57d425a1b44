"""Precision presets of the torch engines: what `dtype=` may name and what each one changes.

A preset is an inference-time switch on the one model module (models/: `DA3Model.set_fused`,
`Dust3r.set_precision`, `cast_backbone`), never a second copy of the network:

| preset        | devices   | what runs reduced                                                 |
|---------------|-----------|-------------------------------------------------------------------|
| 'float32'     | cpu, cuda | nothing (exact; the golden gate rtol 1e-4)                        |
| 'bfloat16'    | cpu, cuda | the whole backbone cast to bf16 (residual stream too); heads fp32 |
| 'float16'     | cuda      | as 'bfloat16' in fp16                                             |
| 'bf16-matmul' | cpu       | ViT / decoder block matmuls in bf16; residual stream, norms and    |
|               |           | heads fp32                                                        |
| 'cpu-fast'    | cpu       | 'bf16-matmul' + the DA3 metric DPT head in bf16 (final logit 1x1  |
|               |           | convs fp32); DUSt3R and any-view heads stay fp32                  |
| 'int8'        | cpu       | block matmuls int8 (fbgemm dynamic: weights per channel,          |
|               |           | activations per tensor); everything else fp32                     |

'auto' resolves per device: on CPU to 'cpu-fast' where the CPU has native bf16 dot products
(`avx512_bf16` or `amx_bf16` in /proc/cpuinfo) - without them bf16 GEMMs are emulated and run
~5-15x SLOWER than fp32 (docs/cpu-performance.md "CPU presets") - else to 'float32'; on CUDA to
'float32'. The resolution is logged by the builder and named in `EngineInfo.dtype`, so
diagnostics say which preset runs. 'int8' is never chosen by 'auto': its accuracy is reported by
benchmarks/bench_cpu_presets.py and gated in the tests, and it is below the 0.999 PCC bar on the
golden cases (docs/cpu-performance.md "Accuracy gates").

Importing this module does not import torch (the ROS layer reads `CHOICES` for the nodes'
`torch_dtype` parameter); dtypes are named, builders map them with `getattr(torch, name)`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

AUTO = 'auto'


@dataclass(frozen=True)
class Preset:
    """One precision preset (module docstring)."""

    name: str
    backbone_dtype: str = 'float32'               # whole-backbone cast ('bfloat16', 'float16')
    matmul: str = 'float32'                       # block matmuls: float32 | bfloat16 | int8
    head_bf16: bool = False                       # DA3 metric DPT head in bf16
    devices: tuple[str, ...] = ('cpu', 'cuda')

    @property
    def exact(self) -> bool:
        """True for the fp32 preset (the golden fixtures' rtol 1e-4 holds)."""
        return self.name == 'float32'


PRESETS = {p.name: p for p in (
    Preset('float32'),
    Preset('bfloat16', backbone_dtype='bfloat16'),
    Preset('float16', backbone_dtype='float16', devices=('cuda',)),
    Preset('bf16-matmul', matmul='bfloat16', devices=('cpu',)),
    Preset('cpu-fast', matmul='bfloat16', head_bf16=True, devices=('cpu',)),
    Preset('int8', matmul='int8', devices=('cpu',)),
)}
"""Every preset by name; `dtype=` also accepts 'auto' and a torch.dtype of the first three."""
CHOICES = (AUTO, *PRESETS)
"""What `dtype=` / the nodes' `torch_dtype` parameter may name."""
CPU_FLAGS_FILE = Path('/proc/cpuinfo')


def cpu_has_native_bf16(cpuinfo: Optional[str] = None) -> bool:
    """Whether this CPU computes bf16 dot products natively (AVX-512 BF16 or AMX-BF16).

    Args:
        cpuinfo: /proc/cpuinfo text (tests); None reads the file (False where it does not exist).
    """
    if cpuinfo is None:
        try:
            cpuinfo = CPU_FLAGS_FILE.read_text()
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        if line.startswith('flags'):
            flags = set(line.partition(':')[2].split())
            return bool(flags & {'avx512_bf16', 'amx_bf16'})
    return False


def resolve_preset(dtype: Any, device: str, *, native_bf16: Optional[bool] = None) -> Preset:
    """The preset `dtype` names for `device` ('cpu' or 'cuda:N').

    Args:
        dtype: None (float32), 'auto', a preset name, or torch.float32 / bfloat16 / float16.
        device: Where the engine runs.
        native_bf16: Override the CPU probe for 'auto' (tests); None = `cpu_has_native_bf16()`.

    Raises:
        ValueError: Unknown name, or a preset not offered on this device (the message says which
            are).
    """
    kind = 'cuda' if str(device).startswith('cuda') else 'cpu'
    if dtype is None:
        return PRESETS['float32']
    name = str(dtype).replace('torch.', '')    # a torch.dtype prints as 'torch.bfloat16'
    if name == AUTO:
        if kind == 'cpu':
            fast = cpu_has_native_bf16() if native_bf16 is None else native_bf16
            return PRESETS['cpu-fast' if fast else 'float32']
        return PRESETS['float32']
    preset = PRESETS.get(name)
    if preset is None:
        raise ValueError(f'dtype={dtype!r}; allowed: {CHOICES}')
    if kind not in preset.devices:
        offered = [p.name for p in PRESETS.values() if kind in p.devices]
        only = 'torch-cuda' if preset.devices == ('cuda',) else 'torch-cpu'
        raise ValueError(f"dtype={name!r} is for {only} only; on {device}: {offered} or "
                         f"'{AUTO}'")
    return preset


def describe(preset: Preset, requested: Any, device: str) -> str:
    """One log line: which preset runs on `device` and, for 'auto', why."""
    if str(requested) != AUTO:
        return f'precision preset {preset.name!r} on {device}'
    why = ('CUDA default' if str(device).startswith('cuda') else
           'native bf16 on this CPU' if preset.name == 'cpu-fast' else
           'no native bf16 dot products on this CPU: bf16 would be slower than fp32')
    return f"precision preset 'auto' -> {preset.name!r} on {device} ({why})"
