"""Conformance of our ttnn usage and of the CPU stand-in with the real ttnn 0.81.1 wheel.

Run: `.venv/bin/python -m devtools.ttnn.conformance.check` (also run by
test/ttnn_conformance/test_ttnn_conformance.py).
1. Creates (once; cached in `.venv-ttnn/`) a Python 3.12 virtualenv holding the real
   `ttnn==0.81.1` wheel from PyPI (cp310/cp312 only; needs numpy<2). No device is needed.
2. Scans the engine sources (`tt_depth_ros/engines/ttnn/**/*.py`; they name the module `ttnn`) for
   every `ttnn.<attr>` they use and every call's positional count and keywords; checks each
   exists in the real package and that some real overload accepts that call.
3. Checks the stand-in's signature of each used callable against the real one: same parameter
   names and kinds, same defaults (this is what makes layer_norm eps 1e-12, SDPA is_causal=True
   and split-heads transpose_key=True bite in tests as on hardware), real required parameters
   required, no parameter the real one lacks.
4. Host conversions (bf16 ROW_MAJOR/TILE, bfloat8_b TILE with pad 0 and pad 1000 — the pad value
   enters the shared exponents, so this checks which lanes are padding — bfloat4_b TILE (the
   fast presets' SDPA mask), uint8 TILE, padded
   shapes): real package under a mock p150 cluster descriptor vs the stand-in, bit for bit, on
   synthetic arrays (ties, a 2^+-29 dynamic range, odd shapes) and on the ViT-block weights as
   the engine uploads them (engine_weight_inputs: what the bfloat8_b presets store as bfloat8_b).
   The real side builds `ttnn.Tensor(tensor=..., data_type=..., layout=..., pad_value=...)` and
   reads `to_list()`: the C++ conversion `ttnn.from_torch`/`to_torch` call (0.81.1
   ttnn/operations/core.py: from_torch ends in that constructor, to_torch in `Tensor.to_torch`);
   the side venv has no torch, so the torch wrappers themselves are not run.
Any problem is printed and the exit status is 1.
"""
from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TTNN_VERSION = '0.81.1'
VENV = ROOT / '.venv-ttnn'
MOCK_DESC = HERE / 'p150_mock_cluster_desc.yaml'
ENGINE_GLOB = str(ROOT / 'tt_depth_ros' / 'engines' / 'ttnn' / '**' / '*.py')   # and subfolders


class ConformanceUnavailable(RuntimeError):
    """No Python 3.12 interpreter to host the real wheel."""


def find_python312() -> str:
    """Locate a Python 3.12 interpreter: $TTNN_CONFORMANCE_PYTHON, PATH, then pyenv."""
    cands = [os.environ.get('TTNN_CONFORMANCE_PYTHON'), shutil.which('python3.12')]
    pyenv_root = os.environ.get('PYENV_ROOT', os.path.expanduser('~/.pyenv'))
    cands += sorted(glob.glob(os.path.join(pyenv_root, 'versions', '3.12*', 'bin', 'python')))
    for c in cands:   # a pyenv shim exists on PATH even when it cannot run 3.12: try each
        if c and os.path.exists(c) and subprocess.run(
                [c, '-c', 'import sys; assert sys.version_info[:2] == (3, 12)'],
                capture_output=True).returncode == 0:
            return c
    raise ConformanceUnavailable('python3.12 not found (PATH, pyenv, $TTNN_CONFORMANCE_PYTHON); '
                                 'ttnn 0.81.1 ships cp310/cp312 wheels only')


def ensure_venv(venv: Path = VENV) -> Path:
    """Create or reuse the side venv with the real wheel; returns its python."""
    py = venv / 'bin' / 'python'
    probe = [str(py), '-c', f"import importlib.metadata as m; assert m.version('ttnn') == "
             f"'{TTNN_VERSION}'"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    base = find_python312()
    subprocess.run([base, '-m', 'venv', '--clear', str(venv)], check=True)
    subprocess.run([str(py), '-m', 'pip', 'install', '-q', '--no-compile', f'ttnn=={TTNN_VERSION}',
                    'numpy<2'], check=True)
    subprocess.run(probe, check=True)
    return py


def _chain(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == 'ttnn' and parts:
        return '.'.join(reversed(parts))
    return None


def engine_usage(paths) -> dict:
    """{name: {'calls': [(n_positional, [keywords], 'file:line')], 'attr': bool}} of ttnn uses."""
    usage: dict = {}
    for path in paths:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
        called = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = _chain(node.func)
                if name is None:
                    continue
                called.add(id(node.func))
                if any(isinstance(a, ast.Starred) for a in node.args) or any(
                        k.arg is None for k in node.keywords):
                    raise ValueError(f'{path}:{node.lineno}: *args/**kwargs in a ttnn call '
                                     'hide it from the conformance check; spell it out')
                usage.setdefault(name, {'calls': [], 'attr': False})['calls'].append(
                    (len(node.args), [k.arg for k in node.keywords],
                     f'{Path(path).name}:{node.lineno}'))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in called:
                name = _chain(node)
                if name and not any(n.startswith(name + '.') for n in usage):
                    usage.setdefault(name, {'calls': [], 'attr': True})['attr'] = True
    # keep only leaf names: 'transformer' is implied by 'transformer.x'
    return {k: v for k, v in usage.items()
            if not any(o.startswith(k + '.') for o in usage) or v['calls']}


def real_signatures(py: Path, names) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        np_, out = Path(tmp) / 'names.json', Path(tmp) / 'sigs.json'
        np_.write_text(json.dumps(sorted(names)))
        _side(py, ['signatures', str(np_), str(out)])
        return json.loads(out.read_text())


def _side(py: Path, args) -> None:
    env = dict(os.environ, TT_METAL_MOCK_CLUSTER_DESC_PATH=str(MOCK_DESC),
               TT_METAL_LOGGER_LEVEL='FATAL', LOGURU_LEVEL='WARNING')
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    r = subprocess.run([str(py), '-m', 'devtools.ttnn.conformance.real_side', *args],
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f'real_side.py {args[0]} failed:\n{r.stdout[-2000:]}\n'
                           f'{r.stderr[-4000:]}')


def accepts(overload, n_pos, keywords) -> str | None:
    """None if the overload accepts the call, else why not."""
    if any(p['kind'] == 'var' for p in overload):
        return None
    positional = [p for p in overload if p['kind'] in ('pos', 'posonly')]
    if n_pos > len(positional):
        return f'{n_pos} positional args, at most {len(positional)} accepted'
    names = {p['name']: p for p in overload}
    for k in keywords:
        if k not in names or names[k]['kind'] == 'posonly':
            return f'keyword {k!r} not accepted (parameters: {list(names)})'
    given = {p['name'] for p in positional[:n_pos]} | set(keywords)
    missing = [p['name'] for p in overload
               if p['has_default'] is False and p['name'] not in given]
    return f'required {missing} not given' if missing else None


def check_usage(usage: dict, real: dict) -> list[str]:
    problems = []
    for name, u in sorted(usage.items()):
        info = real.get(name, {'kind': 'missing'})
        if info['kind'] == 'missing':
            problems.append(f'ttnn.{name}: used by the engine but absent from ttnn {TTNN_VERSION}')
            continue
        for n_pos, kws, where in u['calls']:
            if info['kind'] != 'callable':
                problems.append(f'{where}: ttnn.{name} is called but is not callable')
                continue
            why = [accepts(ov, n_pos, kws) for ov in info['overloads']]
            if all(w is not None for w in why):
                problems.append(f'{where}: ttnn.{name}({n_pos} positional, keywords {kws}) '
                                f'matches no real overload: {"; ".join(why)}')
    return problems


def _norm_default(text):
    if text is None:
        return None
    t = text.strip()
    try:
        v = ast.literal_eval(t)
        if isinstance(v, tuple):
            v = list(v)
        return repr(v)
    except (ValueError, SyntaxError):
        return t


def compare_signature(name, mine, real_overloads) -> str | None:
    """None if some real overload agrees with the stand-in's parameters, else the differences."""
    diffs = []
    for ov in real_overloads:
        if any(p['kind'] == 'var' for p in ov):
            return None
        rp = {p['name']: p for p in ov}
        d = []
        for i, p in enumerate(mine):
            r = rp.get(p['name'])
            if r is None and i < len(ov) and ov[i]['kind'] == 'posonly':
                r = ov[i]                      # positional-only: names are not part of the API
            if r is None:
                d.append(f'{p["name"]} not in real')
                continue
            if p['kind'] != r['kind'] and not (p['kind'] == 'pos' and r['kind'] == 'posonly'):
                d.append(f'{p["name"]}: kind {p["kind"]} vs real {r["kind"]}')
            if r['has_default'] is None:
                pass                           # the real signature does not state its defaults
            elif r['has_default'] != p['has_default'] and r['default'] is not None or (
                    not r['has_default'] and p['has_default']):
                d.append(f'{p["name"]}: default present {p["has_default"]} vs real '
                         f'{r["has_default"]}')
            elif r['default'] is not None and p['default'] is not None and \
                    _norm_default(r['default']) != _norm_default(p['default']):
                d.append(f'{p["name"]}: default {p["default"]} vs real {r["default"]}')
        mine_names = {p['name'] for p in mine}
        d += [f'real required {p["name"]} missing' for i, p in enumerate(ov)
              if p['has_default'] is False and p['name'] not in mine_names
              and not (p['kind'] == 'posonly' and i < len(mine))]
        if not d:
            return None
        diffs.append(', '.join(d))
    return f'ttnn.{name}: stand-in signature differs from every real overload: ' + ' | '.join(
        diffs)


def check_standin(names, standin, real) -> list[str]:
    from devtools.ttnn.conformance.real_side import describe  # same describer on both sides
    problems = []
    for name in sorted(names):
        info = real.get(name, {})
        if info.get('kind') != 'callable':
            continue
        obj = standin
        try:
            for part in name.split('.'):
                obj = getattr(obj, part)
        except AttributeError:
            problems.append(f'ttnn.{name}: used by the engine but missing from the stand-in')
            continue
        mine = describe(obj)
        if mine['kind'] != 'callable':
            continue
        params = [p for p in mine['overloads'][0] if not p['name'].startswith('_')]
        why = compare_signature(name, params, info['overloads'])
        if why:
            problems.append(why)
    return problems


def conversion_inputs() -> dict:
    rs = np.random.RandomState(8)
    return {
        'odd_3d': (rs.randn(1, 37, 50) * 3).astype(np.float32),
        'aligned': (rs.randn(2, 64, 32) * 0.01).astype(np.float32),
        'wide_range': (rs.randn(40, 70) * np.exp(rs.uniform(-20, 20, (40, 70)))).astype(
            np.float32),
        'ties': (np.arange(-100, 100, dtype=np.float32).reshape(8, 25) / 8.0 + 0.5),
        'vector_row': rs.randn(1, 1, 1, 100).astype(np.float32),
        # an SDPA key mask (shape_state.py): 0 and -1e9, which the fast presets store as a block
        # float
        'sdpa_mask': np.where(rs.rand(64, 96) > 0.7, -1e9, 0.0).astype(np.float32),
    }


BLOCK0 = 'model.backbone.pretrained.blocks.0.'


def engine_weight_inputs() -> dict:
    """ViT-block weights exactly as the engine uploads them, from rule-v1 checkpoints.

    [in, out], heads padded to 32 lanes, LayerScale folded into proj/fc2: DA3 tiny block 0 (head
    width 16 -> zero columns between heads) and DA3-Large block 0's fc1 (1024 x 4096). The
    bfloat8_b presets store these as bfloat8_b: the stand-in must quantise them as the real
    library does.
    """
    import torch

    from devtools.checkpoints import key_shapes
    from devtools.rule_weights import rule_v1_state_dict
    from tt_depth_ros.engines.ttnn.layers.attention import self_attention_params
    from tt_depth_ros.engines.ttnn.layers.block import mlp_params
    from tt_depth_ros.models.weight_rule import rule_v1_tensor
    shapes = {k: v for k, v in key_shapes('da3-tiny').items() if k.startswith(BLOCK0)}
    sd = {k: torch.from_numpy(v) for k, v in rule_v1_state_dict(shapes).items()}
    att = self_attention_params(sd, BLOCK0 + 'attn.', 4, sd[BLOCK0 + 'ls1.gamma'])
    mlp = mlp_params(sd, BLOCK0 + 'mlp.', sd[BLOCK0 + 'ls2.gamma'])
    large_fc1 = torch.from_numpy(rule_v1_tensor(BLOCK0 + 'mlp.fc1.weight', (4096, 1024)))
    out = {'tiny_qkv_w': att['qkv'][0], 'tiny_qkv_b': att['qkv'][1],
           'tiny_proj_w': att['proj'][0], 'tiny_fc1_w': mlp['fc1'][0],
           'tiny_fc2_w': mlp['fc2'][0], 'large_fc1_w': large_fc1.t().contiguous()}
    return {k: v.numpy().astype(np.float32) for k, v in out.items()}


def check_host_conversions(py: Path, standin) -> list[str]:
    import torch
    arrays = conversion_inputs() | engine_weight_inputs()
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / 'in.npz', Path(tmp) / 'out.npz'
        np.savez(src, **arrays)
        _side(py, ['convert', str(src), str(dst)])
        real = dict(np.load(dst))
    problems = []
    for key, a in arrays.items():
        cases = {'bf16_rm': (standin.bfloat16, standin.ROW_MAJOR_LAYOUT, None, a),
                 'bf16_tile': (standin.bfloat16, standin.TILE_LAYOUT, None, a),
                 'bf8_tile': (standin.bfloat8_b, standin.TILE_LAYOUT, None, a),
                 'bf8_tile_pad1000': (standin.bfloat8_b, standin.TILE_LAYOUT, 1000.0, a),
                 'bf4_tile': (standin.bfloat4_b, standin.TILE_LAYOUT, None, a),
                 'u8_tile': (standin.uint8, standin.TILE_LAYOUT, None,
                             np.clip(np.abs(a) * 40, 0, 255).astype(np.uint8))}
        for tag, (dtype, layout, pad, src_arr) in cases.items():
            t = standin.from_torch(torch.from_numpy(src_arr), dtype=dtype, layout=layout,
                                   pad_value=pad)
            mine = standin.to_torch(t).to(torch.float32).numpy()
            ref = real[f'{key}.{tag}']
            if list(t.padded_shape) != real[f'{key}.{tag}.padded'].tolist():
                problems.append(f'{key}/{tag}: padded shape {list(t.padded_shape)} vs real '
                                f'{real[key + "." + tag + ".padded"].tolist()}')
            if not np.array_equal(mine.view(np.uint32), ref.astype(np.float32).view(np.uint32)):
                bad = np.flatnonzero(mine.view(np.uint32).ravel() != ref.astype(np.float32).view(
                    np.uint32).ravel())
                i = bad[0] if bad.size else 0
                problems.append(f'{key}/{tag}: {bad.size} values differ bitwise from the real '
                                f'package '
                                f'(first at {i}: stand-in {mine.ravel()[i]!r}, real '
                                f'{ref.ravel()[i]!r}, input {a.ravel()[i]!r})')
    return problems


def run(engine_paths=None, *, usage=None, standin=None, py=None) -> tuple[list[str], dict]:
    """All checks; returns (problems, summary). `usage`/`standin` may be injected by tests."""
    if standin is None:
        from devtools.ttnn import standin
    py = py or ensure_venv()
    if usage is None:
        paths = sorted(engine_paths or glob.glob(ENGINE_GLOB, recursive=True))
        usage = engine_usage(paths)
    real = real_signatures(py, usage)
    problems = check_usage(usage, real) + check_standin(usage, standin, real)
    problems += check_host_conversions(py, standin)
    summary = {'ttnn_version': real.get('__version__', {}).get('repr'), 'names': len(usage),
               'calls': sum(len(u['calls']) for u in usage.values())}
    return problems, summary


def main() -> int:
    try:
        problems, summary = run()
    except ConformanceUnavailable as e:
        print(f'CONFORMANCE NOT RUN: {e}')
        return 2
    print(f'ttnn {summary["ttnn_version"]}: {summary["names"]} names, {summary["calls"]} calls '
          'checked; host conversions compared')
    for p in problems:
        print('PROBLEM:', p)
    print('OK' if not problems else f'{len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
