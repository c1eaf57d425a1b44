"""Measured ports as data, for validating the device-time estimate (benchmarks/ttnn_validate.py).

- tt_mast3r_dust3r.py: the DUSt3R port's ttnn calls (public code), played through the real
  library by player.py; its measured stage and pair times.
- da3_port.py: what is known of the DA3 port (its card's figures) and the assumed rest, as op lists;
  records() below turns them into device-op records.
Imports devtools.ttnn only; player.py needs the project venv (torch) and the dry run's side venv.
"""
from __future__ import annotations


def _t(shape, buffer='L1', layout='INTERLEAVED', shard=None, dtype='BFLOAT16') -> dict:
    return {'shape': list(shape), 'padded': [-(-v // 32) * 32 if i >= len(shape) - 2 else v
                                             for i, v in enumerate(shape)],
            'dtype': dtype, 'buffer': buffer, 'memory_layout': layout,
            'shard_shape': list(shard) if shard else None, 'layout': 'TILE'}


def _tiles(n: int) -> int:
    return -(-n // 32)


def _block_shard(rows: int, cols: int, grid) -> tuple[int, int]:
    """Shard shape of a (rows, cols) tensor block-sharded over grid (x: cols, y: rows)."""
    return _tiles(rows) // 1 and -(-_tiles(rows) // grid[1]) * 32, -(-_tiles(cols) // grid[0]) * 32


def _sharded(rows: int, cols: int, grid, height: bool = False) -> dict:
    if height:
        shard = (-(-_tiles(rows) // (grid[0] * grid[1])) * 32, cols)
        return _t((1, 1, rows, cols), layout='HEIGHT_SHARDED', shard=shard)
    return _t((1, 1, rows, cols), layout='BLOCK_SHARDED', shard=_block_shard(rows, cols, grid))


def records(ops: list[dict], grid: tuple[int, int]) -> list[dict]:
    """Device-op records (the estimator's input) of a hand-described op list (da3_port.OPS).

    Matmul and norm activations block-sharded over the grid, weights in DRAM; a conv is a halo
    and a conv program (as ttnn.conv2d runs one on a sharded input), its maps height-sharded from
    74x74 pixels up; SDPA's q/k/v interleaved in L1.
    """
    cores = grid[0] * grid[1]
    out = []

    def rec(device_op, ins, outs, fid=None, factory='', **kw):
        out.append({'device_op': device_op, 'factory': factory, 'inputs': ins, 'outputs': outs,
                    'math_fidelity': fid, 'grid': list(grid), 'cores': cores, 'stack': [],
                    'chunks': kw.get('chunks'), 'programs': 1})

    for op in ops:
        kind = op['op']
        if kind == 'matmul':
            m, k, n = op['m'], op['k'], op['n']
            ins = [_sharded(m, k, grid), _t((1, 1, k, n), buffer='DRAM')]
            if op.get('residual'):
                ins.append(_sharded(m, n, grid))
            rec('MatmulDeviceOperation', ins, [_sharded(m, n, grid)], op['fidelity'],
                'MatmulMultiCoreReuseMcast2DProgramFactory')
        elif kind == 'layer_norm':
            rows, d = op['shape']
            rec('LayerNormDeviceOperation', [_sharded(rows, d, grid)], [_sharded(rows, d, grid)])
        elif kind == 'data movement':
            rows, d = op['shape']
            rec('NlpCreateHeadsDeviceOperation' if 'create' in op['name'] else
                'NLPConcatHeadsDeviceOperation', [_t((1, 1, rows, d))], [_t((1, 1, rows, d))])
        elif kind == 'sdpa':
            q = _t((1, op['heads'], op['seq'], op['dh']))
            rec('SDPAOperation', [q, q, q], [q], op['fidelity'], chunks=list(op.get('chunks')
                                                                          or (128, 256)))
        elif kind == 'eltwise':
            rows, d = op['shape']
            t = _sharded(rows, d, grid, height=rows >= 74 * 74)
            rec('BinaryNgDeviceOperation', [t, t], [t])
        elif kind == 'resize':
            rows, d = op['shape']
            rec('UpsampleOperation', [_sharded(rows // 4, d, grid, height=rows >= 74 * 74)],
                [_sharded(rows, d, grid, height=rows >= 74 * 74)])
        elif kind == 'conv':
            hw, cin, cout, k, s = op['hw'], op['cin'], op['cout'], op['k'], op['stride']
            if op.get('transpose'):
                px_out, kk = (hw * s) ** 2, cin
            else:
                px_out, kk = (-(-hw // s)) ** 2, k * k * cin
            height = px_out >= 74 * 74
            x = _sharded(hw * hw, cin, grid, height=hw * hw >= 74 * 74)
            if not op.get('transpose') and k > 1:
                rec('HaloDeviceOperation', [x], [x])
            rec('Conv2dDeviceOperation', [x, _t((1, 1, kk, cout), buffer='DRAM')],
                [_sharded(px_out, cout, grid, height=height)], op['fidelity'],
                'Conv2dShardedProgramFactory')
        else:
            raise ValueError(f'reference design op {kind!r}: unknown (records() builds matmul, '
                             'layer_norm, data movement, sdpa, eltwise, resize, conv)')
    return out
