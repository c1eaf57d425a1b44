"""Play a reference design's ttnn calls through the REAL ttnn 0.81.1 library on a mock p150.

A design (tt_mast3r_dust3r.py) lists the calls a measured port makes, as data. This module
issues them, in order, with zero-valued tensors of the stated shapes, through the dry run's
bridge (devtools/ttnn/dryrun: the real wheel in the side venv, a mock p150), once eagerly (the
warm-up: programs compiled, conv weights prepared) and once inside a trace capture, one capture
per stage. What comes back are the device ops the library ran for the captured calls, recorded
the same way as the engine's (op_records.py): the estimator prices both alike.

The library here is 0.81.1; the port ran tt-metal v0.78.0-dev, whose program choices may differ.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

from devtools.ttnn.dryrun import driver, environment
from devtools.ttnn.dryrun.bridge import Bridge

L1_SMALL_SIZE = 32 * 1024           # the port's open_device (its DEVICE_VALIDATION.md, section 1)


class Player:
    """One bridge session; `play_stage` issues a stage's calls and returns its device ops."""

    def __init__(self, grid: str = '11x10'):
        self.work = Path(tempfile.mkdtemp(prefix='tt_depth_ros_reference_'))
        env = environment.side_env()
        env['TT_METAL_MOCK_CLUSTER_DESC_PATH'] = str(driver.mock_descriptor(grid, self.work))
        env['TT_DRYRUN_OP_RECORDS'] = '1'
        self.bridge = Bridge(str(environment.ensure_dryrun_venv()), env,
                             self.work / 'real_ttnn.log')
        self.ttnn = ttnn = self.bridge.module
        self._saved = sys.modules.get('ttnn')
        sys.modules['ttnn'] = ttnn
        self.device = ttnn.open_device(device_id=0, l1_small_size=L1_SMALL_SIZE,
                                       trace_region_size=64 << 20)
        self.grid = self.device.compute_with_storage_grid_size()
        self._weights: dict = {}
        self._prepared: dict = {}

    def close(self) -> dict:
        """Close the device and the session; the bridge's report (records of rejected calls)."""
        try:
            rep = self.bridge.report()
            self.ttnn.close_device(self.device)
        finally:
            self.bridge.close()
            if self._saved is None:
                sys.modules.pop('ttnn', None)
            else:
                sys.modules['ttnn'] = self._saved
        return rep

    # -- tensors ------------------------------------------------------------------------------
    def tensor(self, shape, layout: str = 'TILE', host: bool = False):
        ttnn = self.ttnn
        data = torch.zeros(tuple(shape), dtype=torch.bfloat16)
        if host:
            return ttnn.from_torch(data, dtype=ttnn.bfloat16)
        return ttnn.from_torch(data, dtype=ttnn.bfloat16, device=self.device,
                               layout=getattr(ttnn, f'{layout}_LAYOUT'),
                               memory_config=ttnn.DRAM_MEMORY_CONFIG)

    def weight(self, shape, host: bool = False):
        """One device (or host) tensor per shape, shared by every call that needs that shape."""
        key = (tuple(shape), host)
        if key not in self._weights:
            self._weights[key] = self.tensor(shape, host=host)
        return self._weights[key]

    def kernel_config(self, fidelity: str, fp32_acc: bool, packer_l1_acc: bool):
        ttnn = self.ttnn
        return ttnn.init_device_compute_kernel_config(
            self.device.arch(), math_fidelity=getattr(ttnn.MathFidelity, fidelity),
            math_approx_mode=False, fp32_dest_acc_en=fp32_acc, packer_l1_acc=packer_l1_acc)

    # -- calls --------------------------------------------------------------------------------
    def run(self, call: dict, env: dict, variant: dict) -> None:
        """Issue one design call; its inputs and outputs live in `env` by name."""
        ttnn, c = self.ttnn, call['call']
        x = [env[n] for n in call['in']]
        out = call['out']
        if c == 'rename':
            vals = list(x)
            for name, v in zip(out, vals):
                env[name] = v
            return
        if c == 'linear':
            h = x[0]
            if call.get('tile_first') and h.layout != ttnn.TILE_LAYOUT:
                h = ttnn.to_layout(h, ttnn.TILE_LAYOUT)
            kw = {'bias': self.weight((1, 1, call['n']))} if call.get('bias') else {}
            if call.get('activation'):
                kw['activation'] = call['activation']
            y = ttnn.linear(h, self.weight((call['k'], call['n'])), **kw)
        elif c == 'residual_linear':
            h, res = x
            w, b = self.weight((call['k'], call['n'])), self.weight((1, 1, call['n']))
            if variant['residual'] == 'dit':
                mb, kb, nb, sh, sw = call['dit_blocks']
                cfg = ttnn.MinimalMatmulConfig(M_block_size=mb, K_block_size=kb,
                                               N_block_size=nb, subblock_h=sh, subblock_w=sw,
                                               compute_with_storage_grid_size=self.grid)
                ck = self.kernel_config(call['dit_fidelity'], call['dit_fp32_acc'],
                                        call['dit_packer_l1_acc'])
                y = ttnn.experimental.dit_minimal_matmul_addcmul_fused(
                    h, w, 1.0, res, self.weight((1, 1, call['n'])), bias_tensor=b, config=cfg,
                    compute_kernel_config=ck)
            else:
                y = ttnn.add(res, ttnn.linear(h, w, bias=b))
        elif c == 'layer_norm':
            d = int(x[0].shape[-1])
            y = ttnn.layer_norm(x[0], weight=self.weight((1, 1, d)), bias=self.weight((1, 1, d)),
                                epsilon=call['epsilon'])
        elif c == 'split_heads':
            kw = {'kv_input_tensor': x[1]} if len(x) > 1 else {}
            y = ttnn.transformer.split_query_key_value_and_split_heads(
                x[0], num_heads=call['heads'], transpose_key=False, **kw)
        elif c == 'rope_llama':
            cs = self.weight((1, 1, call['seq'], call['dh']))
            y = ttnn.experimental.rotary_embedding_llama(
                x[0], cs, cs, self.weight((1, 1, 32, 32)), is_decode_mode=False,
                compute_kernel_config=self.kernel_config(call['fidelity'], call['fp32_acc'],
                                                         call['packer_l1_acc']))
        elif c == 'sdpa':
            kw = {}
            if variant.get('sdpa_chunks'):
                qc, kc = variant['sdpa_chunks']
                kw['program_config'] = ttnn.SDPAProgramConfig(
                    compute_with_storage_grid_size=self.grid, q_chunk_size=qc, k_chunk_size=kc,
                    exp_approx_mode=False)
            y = ttnn.transformer.scaled_dot_product_attention(*x, is_causal=False, **kw)
        elif c == 'concat_heads':
            y = ttnn.transformer.concatenate_heads(x[0])
        elif c == 'add':
            y = ttnn.add(x[0], x[1])
        elif c == 'relu':
            y = ttnn.relu(x[0])
        elif c == 'reshape':
            y = ttnn.reshape(x[0], tuple(call['shape']))
        elif c == 'permute':
            y = ttnn.permute(x[0], tuple(call['dims']))
        elif c == 'to_layout':
            layout = getattr(ttnn, f'{call["layout"]}_LAYOUT')
            y = x[0] if x[0].layout == layout else ttnn.to_layout(x[0], layout)
        elif c == 'slice':
            y = ttnn.slice(x[0], list(call['begin']), list(call['end']))
        elif c == 'upsample':
            y = ttnn.upsample(x[0], scale_factor=call['scale'], mode='bilinear')
        elif c == 'sharded_to_interleaved':
            y = ttnn.sharded_to_interleaved(x[0], ttnn.DRAM_MEMORY_CONFIG) \
                if x[0].is_sharded() else x[0]
        elif c in ('conv2d', 'conv_transpose2d'):
            y = self._conv(call, x[0])
        else:
            raise ValueError(f'reference design call {c!r} (at {call.get("site")}): unknown; '
                             'player.Player.run issues the calls listed in its module doc')
        if isinstance(out, list):
            for name, v in zip(out, y):
                env[name] = v
        else:
            env[out] = y

    def _conv(self, call: dict, x):
        ttnn = self.ttnn
        key = id(call)
        transpose = call['call'] == 'conv_transpose2d'
        if key not in self._prepared:
            shape = (call['cin'], call['cout'], call['k'], call['k']) if transpose else \
                (call['cout'], call['cin'], call['k'], call['k'])
            self._prepared[key] = (self.weight(shape, host=True),
                                   self.weight((1, 1, 1, call['cout']), host=True)
                                   if call.get('bias', True) else None)
        w, b = self._prepared[key]
        kw = dict(input_tensor=x, weight_tensor=w, bias_tensor=b, device=self.device,
                  in_channels=call['cin'], out_channels=call['cout'], batch_size=1,
                  input_height=call['hw'], input_width=call['hw'],
                  kernel_size=(call['k'], call['k']), stride=(call['stride'], call['stride']),
                  padding=(call['pad'], call['pad']), return_weights_and_bias=True)
        if transpose:
            y, (pw, pb) = ttnn.conv_transpose2d(**kw)
        else:
            if call.get('relu'):
                kw['conv_config'] = ttnn.Conv2dConfig(
                    activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU))
            kw['compute_config'] = self.kernel_config(call['fidelity'], call['fp32_acc'],
                                                      call['packer_l1_acc'])
            y, (pw, pb) = ttnn.conv2d(**kw)
        self._prepared[key] = (pw, pb if b is not None else None)
        return y

    def play_stage(self, name: str, blocks: list, inputs: dict, variant: dict) -> list[dict]:
        """Warm up, then capture `blocks` ([(calls, repeat)]); the captured device ops."""
        given = {n: self.tensor(shape, layout) for n, (shape, layout) in inputs.items()}

        def once():
            env = dict(given)
            for calls, repeat in blocks:
                for _ in range(repeat):
                    for call in calls:
                        self.run(call, env, variant)
            return env
        self.bridge.phase(f'warm {name}')
        once()
        self.bridge.phase(name)
        tid = self.ttnn.begin_trace_capture(self.device, cq_id=0)
        once()
        self.ttnn.end_trace_capture(self.device, tid, cq_id=0)
        rep = self.bridge.report()
        trace = [t for t in rep['traces'] if t['phase'] == name][-1]
        self.ttnn.release_trace(self.device, tid)
        return trace['ops']


def play(design, stages: list[tuple[str, str]], grid: str = '11x10') -> dict:
    """{(stage, variant): device-op records} of a design module's STAGES under VARIANTS."""
    t0 = time.perf_counter()
    p = Player(grid)
    out, problems = {}, []
    try:
        for stage, variant in stages:
            blocks, inputs, _ = design.STAGES[stage]
            out[(stage, variant)] = p.play_stage(f'{stage} [{variant}]', blocks, inputs,
                                                 design.VARIANTS[variant])
    finally:
        rep = p.close()
        problems = [f"{r['kind']}: {r['op']} at {r['site']}: {r['error'].strip()[-200:]}"
                    for r in rep.get('records', []) if r['kind'] != 'expected']
        driver.clean_work_dir(p.work, keep_log=bool(problems))     # the log stays on a problem
    return {'records': out, 'problems': problems, 'wall_s': time.perf_counter() - t0,
            'log': str(p.work / 'real_ttnn.log') if problems else None}
