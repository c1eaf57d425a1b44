"""The measured DA3METRIC-LARGE port (changh95/tt-Depth-Anything-3) as data: what is known.

Its code and op list are not public (the stored repository holds an earlier state and none of
these figures); the facts below are the ones its card states, as the project's p150 speed brief
quotes them (its p150 targets: docs/design.md §4), and they are all the
validation may use:
- DA3METRIC-LARGE at 518x518, a p150 with ETH dispatch: 120 cores (12x10), 1 command queue;
- activations block-sharded; qkv, proj and fc2 at HiFi2 (with a weight debias: a weight scale,
  no op), fc1, SDPA and the head at HiFi3; a bf16 head;
- 265 device ops, kernel sum 11.46-11.50 ms, 13.49 ms traced, 14.93 ms per run().

Everything else is the network (DA3METRIC-LARGE: DINOv2-L, 24 blocks of width 1024, 16 heads of
64, 37x37 patches + cls = 1370 tokens, tile-padded 1376; its DPT head as in
tt_depth_ros/models/da3) and ASSUMPTIONS, each marked. Two readings of what the 265 ops were:

- BACKBONE_OPS, the backbone alone (the reading the evidence favours): every public state of the
  port (changh95/tt-Depth-Anything-3 @ b8a87ad and @ dc5fe31, README.md and TODO.md: "24-block
  backbone on chip + bf16 channels-last CPU head", "CPU DPT head ... ~110 ms", porting the head
  to the chip its open item 1.1) runs the DPT head on the host, and 265 = 24 x 11 + 1 is what a
  DINOv2 block of 11 device ops makes (LayerNorm, qkv, head split, SDPA, head merge, proj,
  residual add, LayerNorm, fc1 with GELU, fc2, residual add; LayerScale folded into proj / fc2)
  plus one op (ASSUMED: a LayerNorm of a tap).
- OPS, backbone and DPT head on the device: 9 ops a block (ASSUMED: the residual and LayerScale
  fused into proj / fc2 as the DUSt3R port's dit_minimal_matmul_addcmul_fused does, GELU fused
  into fc1) and the head as one op per conv, resize, add or 1x1, its maps height-sharded in L1
  from 74x74 up, block-sharded below. It comes to 293 ops, not 265.
Both take SDPA chunks 128 / 256 (ASSUMED: the DUSt3R port's).
"""
from __future__ import annotations

SOURCE = "the DA3 port's card figures, as the project's p150 speed brief quotes them"
GRID = (12, 10)
TOKENS = 1376                  # 1370 tile-padded
MEASURED = {'ops': 265, 'kernel_ms': (11.46, 11.50), 'trace_ms': 13.49, 'run_ms': 14.93}
FIDELITY = {'qkv': 'HiFi2', 'proj': 'HiFi2', 'fc2': 'HiFi2', 'fc1': 'HiFi3', 'sdpa': 'HiFi3',
            'head': 'HiFi3'}
SDPA_CHUNKS = (128, 256)       # ASSUMPTION (the DUSt3R port's)

EMBED = [                      # ASSUMPTION: the patch conv as one matmul + the pos-embed add
    {'op': 'matmul', 'm': 1369, 'k': 588, 'n': 1024, 'fidelity': 'HiFi3'},
    {'op': 'eltwise', 'shape': (TOKENS, 1024)},
]
BLOCK = [                      # ASSUMPTION: 9 ops a block (module doc)
    {'op': 'layer_norm', 'shape': (TOKENS, 1024)},
    {'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': 3072, 'fidelity': FIDELITY['qkv']},
    {'op': 'data movement', 'name': 'create heads', 'shape': (TOKENS, 3072)},
    {'op': 'sdpa', 'heads': 16, 'seq': 1370, 'dh': 64, 'fidelity': FIDELITY['sdpa']},
    {'op': 'data movement', 'name': 'concat heads', 'shape': (TOKENS, 1024)},
    {'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': 1024, 'fidelity': FIDELITY['proj'],
     'residual': True},
    {'op': 'layer_norm', 'shape': (TOKENS, 1024)},
    {'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': 4096, 'fidelity': FIDELITY['fc1']},
    {'op': 'matmul', 'm': TOKENS, 'k': 4096, 'n': 1024, 'fidelity': FIDELITY['fc2'],
     'residual': True},
]


def _conv(hw, cin, cout, k=3, stride=1):
    return {'op': 'conv', 'hw': hw, 'cin': cin, 'cout': cout, 'k': k, 'stride': stride,
            'fidelity': FIDELITY['head']}


def _rcu(hw):                  # relu, conv (relu fused), conv, add
    return [{'op': 'eltwise', 'shape': (hw * hw, 256)}, _conv(hw, 256, 256), _conv(hw, 256, 256),
            {'op': 'eltwise', 'shape': (hw * hw, 256)}]


def _fusion(hw, out_hw, skip):
    ops = (_rcu(hw) + [{'op': 'eltwise', 'shape': (hw * hw, 256)}] if skip else []) + _rcu(hw)
    return ops + [{'op': 'resize', 'shape': (out_hw * out_hw, 256)},
                  {'op': 'matmul', 'm': out_hw * out_hw, 'k': 256, 'n': 256,
                   'fidelity': FIDELITY['head']}]


# DA3METRIC-LARGE's DPT head (tt_depth_ros/models/da3): reassemble 1x1 projections to
# 256 / 512 / 1024 / 1024, ConvT x4 (to 148), ConvT x2 (to 74), identity (37), 3x3 stride 2
# (to 19); layer_rn 3x3 to 256; fusion 4 -> 1 (to 37, 74, 148, 296); output 3x3 256 -> 128 at
# 296, resize to 518, 3x3 128 -> 32, 1x1 32 -> 2.
HEAD = [
    *[{'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': c, 'fidelity': FIDELITY['head']}
      for c in (256, 512, 1024, 1024)],
    {'op': 'conv', 'hw': 37, 'cin': 256, 'cout': 256, 'k': 4, 'stride': 4, 'transpose': True,
     'fidelity': FIDELITY['head']},
    {'op': 'conv', 'hw': 37, 'cin': 512, 'cout': 512, 'k': 2, 'stride': 2, 'transpose': True,
     'fidelity': FIDELITY['head']},
    _conv(37, 1024, 1024, stride=2),
    _conv(148, 256, 256), _conv(74, 512, 256), _conv(37, 1024, 256), _conv(19, 1024, 256),
    *_fusion(19, 37, skip=False), *_fusion(37, 74, skip=True), *_fusion(74, 148, skip=True),
    *_fusion(148, 296, skip=True),
    _conv(296, 256, 128),
    {'op': 'resize', 'shape': (518 * 518, 128)},
    _conv(518, 128, 32),
    {'op': 'matmul', 'm': 518 * 518, 'k': 32, 'n': 2, 'fidelity': FIDELITY['head']},
]
OPS = EMBED + BLOCK * 24 + HEAD

BACKBONE_BLOCK = [             # ASSUMPTION: 11 ops a block, residual adds unfused (module doc)
    {'op': 'layer_norm', 'shape': (TOKENS, 1024)},
    {'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': 3072, 'fidelity': FIDELITY['qkv']},
    {'op': 'data movement', 'name': 'create heads', 'shape': (TOKENS, 3072)},
    {'op': 'sdpa', 'heads': 16, 'seq': 1370, 'dh': 64, 'fidelity': FIDELITY['sdpa']},
    {'op': 'data movement', 'name': 'concat heads', 'shape': (TOKENS, 1024)},
    {'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': 1024, 'fidelity': FIDELITY['proj']},
    {'op': 'eltwise', 'shape': (TOKENS, 1024)},
    {'op': 'layer_norm', 'shape': (TOKENS, 1024)},
    {'op': 'matmul', 'm': TOKENS, 'k': 1024, 'n': 4096, 'fidelity': FIDELITY['fc1']},
    {'op': 'matmul', 'm': TOKENS, 'k': 4096, 'n': 1024, 'fidelity': FIDELITY['fc2']},
    {'op': 'eltwise', 'shape': (TOKENS, 1024)},
]
BACKBONE_OPS = BACKBONE_BLOCK * 24 + [{'op': 'layer_norm', 'shape': (TOKENS, 1024)}]
READINGS = {'backbone on device, head on the host': BACKBONE_OPS,
            'backbone and DPT head on device': OPS}
