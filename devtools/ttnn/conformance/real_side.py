"""Side of the conformance check that runs inside the Python 3.12 venv with the real ttnn.

The venv holds the real `ttnn==0.81.1` wheel (no torch, no device). Two commands, JSON/NPZ in
and out, driven by `check.py` (`python -m devtools.ttnn.conformance.real_side ...`, the repository
root on PYTHONPATH):

  real_side.py signatures NAMES.json OUT.json   -> every named ttnn attribute: its call
                                                   signature(s) (nanobind or Python) or its repr
  real_side.py convert IN.npz OUT.npz           -> host conversions of each array with the real
                                                   package: bf16 ROW_MAJOR/TILE, bfloat8_b TILE
                                                   (pad 0 and pad 1000), uint8 TILE; padded shapes

Host conversion needs TT_METAL_MOCK_CLUSTER_DESC_PATH (a one-chip p150 descriptor) to be set.
"""
import inspect
import json
import sys

import numpy as np


def _split_params(text):
    out, depth, cur, quote = [], 0, '', None
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in '\'"':
            quote = ch
        elif ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _parse_nb(sig, defaults):
    start = sig.index('(')
    depth, end = 0, None
    for i in range(start, len(sig)):
        depth += sig[i] == '('
        depth -= sig[i] == ')'
        if depth == 0:
            end = i
            break
    params, kind = [], 'pos'
    inner = sig[start + 1:end]
    # a hand-written nanobind signature (nb::sig) may omit every default: then "unknown"
    unknown = '=' not in inner and '\\' not in inner.replace('\\*', '')
    for p in _split_params(inner):
        if p in ('\\*', '*'):
            kind = 'kw'
            continue
        if p == '/':
            for q in params:
                q['kind'] = 'posonly'
            continue
        if p.startswith('*'):
            params.append({'name': p.lstrip('*').split(':')[0], 'kind': 'var', 'default': None,
                           'has_default': True})
            continue
        name = p.split(':')[0].split('=')[0].strip()
        if name == 'self':
            continue
        entry = {'name': name, 'kind': kind, 'has_default': None if unknown else False,
                 'default': None}
        if '=' in p:
            dv = p.rsplit('=', 1)[1].strip()
            entry['has_default'] = True
            if dv.startswith('\\') and dv[1:].isdigit() and defaults is not None:
                entry['default'] = repr(defaults[int(dv[1:])])
            else:
                entry['default'] = dv
        params.append(entry)
    return params


def _parse_inspect(fn):
    kinds = {'POSITIONAL_ONLY': 'posonly', 'POSITIONAL_OR_KEYWORD': 'pos', 'KEYWORD_ONLY': 'kw',
             'VAR_POSITIONAL': 'var', 'VAR_KEYWORD': 'var'}
    out = []
    for p in inspect.signature(fn).parameters.values():
        has = p.default is not inspect.Parameter.empty or kinds[p.kind.name] == 'var'
        out.append({'name': p.name, 'kind': kinds[p.kind.name], 'has_default': has,
                    'default': repr(p.default) if p.default is not inspect.Parameter.empty
                    else None})
    return out


def describe(obj):
    """Signature overloads of a ttnn callable, or its repr for plain values."""
    fn = getattr(obj, 'function', None) if type(obj).__name__ == 'FastOperation' else obj
    cands = [fn]
    if not inspect.isfunction(fn):
        cands.append(type(fn).__call__)
    if inspect.isclass(obj) or type(obj).__name__ == 'nb_type':
        cands = [getattr(obj, '__init__', None)]
    for c in cands:
        s = getattr(c, '__nb_signature__', None)
        if s:
            return {'kind': 'callable',
                    'overloads': [_parse_nb(ov[0], ov[2] if len(ov) > 2 else None) for ov in s]}
    if inspect.isclass(obj):
        params = _parse_inspect(obj.__init__)
        return {'kind': 'callable', 'overloads': [[p for p in params if p['name'] != 'self']]}
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return {'kind': 'callable', 'overloads': [_parse_inspect(fn)]}
    return {'kind': 'value', 'repr': repr(obj)}


def signatures(names_path, out_path):
    import ttnn
    result = {}
    for name in json.load(open(names_path)):
        obj = ttnn
        try:
            for part in name.split('.'):
                obj = getattr(obj, part)
        except AttributeError:
            result[name] = {'kind': 'missing'}
            continue
        result[name] = describe(obj)
    from importlib.metadata import version
    result['__version__'] = {'kind': 'value', 'repr': version('ttnn')}
    json.dump(result, open(out_path, 'w'), indent=1)


def convert(in_path, out_path):
    import ttnn
    arrays = np.load(in_path)
    out = {}
    for key in arrays.files:
        a = arrays[key].astype(np.float32)
        for tag, dtype, layout, pad in (
                ('bf16_rm', ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT, None),
                ('bf16_tile', ttnn.bfloat16, ttnn.TILE_LAYOUT, None),
                ('bf8_tile', ttnn.bfloat8_b, ttnn.TILE_LAYOUT, None),
                ('bf8_tile_pad1000', ttnn.bfloat8_b, ttnn.TILE_LAYOUT, 1000.0),
                ('bf4_tile', ttnn.bfloat4_b, ttnn.TILE_LAYOUT, None)):
            t = ttnn.Tensor(tensor=a, data_type=dtype, layout=layout, pad_value=pad)
            out[f'{key}.{tag}'] = np.asarray(t.to_list(), dtype=np.float32).reshape(a.shape)
            out[f'{key}.{tag}.padded'] = np.asarray(list(t.padded_shape), dtype=np.int64)
        u = np.clip(np.abs(a) * 40, 0, 255).astype(np.uint8)
        t = ttnn.Tensor(tensor=u, data_type=ttnn.uint8, layout=ttnn.TILE_LAYOUT)
        out[f'{key}.u8_tile'] = np.asarray(t.to_list(), dtype=np.float32).reshape(a.shape)
        out[f'{key}.u8_tile.padded'] = np.asarray(list(t.padded_shape), dtype=np.int64)
    np.savez(out_path, **out)


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'signatures':
        signatures(sys.argv[2], sys.argv[3])
    elif cmd == 'convert':
        convert(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f'unknown command {cmd!r}')
