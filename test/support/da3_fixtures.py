"""DA3 golden fixtures: paths, PNG loading, rule-v1 checkpoints (tiny and full size).

The tiny golden weights are not shipped; rule-v1 regenerates them bit-exactly from the key list in
`test/data/da3/tiny_config.json`. Large key shapes come from our own model built on the meta device
(no memory), with the `model.` prefix of the HF checkpoint.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import cv2
import numpy as np

from devtools.checkpoints import da3_key_shapes, key_shapes
from devtools.rule_weights import rule_v1_state_dict

DATA = Path(__file__).resolve().parents[1] / 'data' / 'da3'
TINY_SIZES = ('518x518', '280x504', '378x504')
PREPROC_CASES = ('1280x720', '640x480', '1242x375', '480x640', '300x200')


def tiny_config_json() -> dict:
    return json.loads((DATA / 'tiny_config.json').read_text())


def tiny_key_shapes() -> dict[str, tuple[int, ...]]:
    return key_shapes('da3-tiny')


@functools.lru_cache(maxsize=1)
def _tiny_state() -> dict[str, np.ndarray]:
    return rule_v1_state_dict(tiny_key_shapes())


def tiny_state_dict() -> dict[str, np.ndarray]:
    """rule-v1 tiny checkpoint, HF key names (with `model.`), float32 numpy (fresh dict)."""
    return dict(_tiny_state())


def large_key_shapes(cfg=None) -> dict[str, tuple[int, ...]]:
    """HF key -> shape of the full-size model (`cfg`, default LARGE), on the meta device."""
    from tt_depth_ros.models.da3.config import LARGE
    return da3_key_shapes(cfg or LARGE)


def write_safetensors(state: dict[str, np.ndarray], path: Path) -> Path:
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v) for k, v in state.items()}, str(path))
    return path


def load_png_rgb(name: str) -> np.ndarray:
    """uint8 RGB of a fixture PNG."""
    bgr = cv2.imread(str(DATA / name), cv2.IMREAD_COLOR)
    assert bgr is not None, name
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def golden(name: str) -> dict[str, np.ndarray]:
    with np.load(DATA / name) as z:
        return {k: z[k] for k in z.files}


def assert_close_golden(ours: np.ndarray, ref: np.ndarray, kind: str,
                        scale_ref: np.ndarray | None = None) -> None:
    """Fixture README tolerances: rtol 1e-4, atol = k * max|scale_ref| (depth 1e-5, sky 5e-5).

    For 'sky' pass the golden sky_logit as scale_ref (the README scales both sky arrays by it).
    """
    atol_scale = {'depth': 1e-5, 'sky': 5e-5, 'sky_logit': 5e-5, 'feat': 2e-5}[kind]
    atol = atol_scale * float(np.max(np.abs(ref if scale_ref is None else scale_ref)))
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=atol, err_msg=kind)


# ---------------------------------------------------------------------------------------------
# any-view family (test/data/da3_anyview: upstream-produced fixtures, docs/golden.md)
# ---------------------------------------------------------------------------------------------
ANYVIEW = DATA.parent / 'da3_anyview'
ANYVIEW_KEY_LISTS = {'da3-small': 'keys_da3-small.txt', 'da3-base': 'keys_da3-base.txt',
                     'da3-large-1.1': 'keys_da3-large-1.1.txt',
                     'da3-giant-1.1': 'keys_da3-giant-1.1.txt',
                     'da3nested-giant-large-1.1': 'keys_da3nested-giant-large-1.1.txt'}
# test/data/da3_anyview/README.md "Tolerances": (rtol, atol factor on max|ref|, atol floor on it)
ANYVIEW_TOL = {'depth': (1e-4, 1e-5, 0.0), 'depth_conf': (1e-4, 1e-5, 0.0),
               'ray_conf': (1e-4, 1e-5, 0.0), 'conf': (1e-4, 1e-5, 0.0),
               'ray': (1e-4, 5e-5, 0.0), 'feat': (1e-4, 2e-5, 0.0), 'cam_token': (1e-4, 2e-5, 0.0),
               'pose_enc': (0.0, 2e-5, 1.0), 'extrinsics': (0.0, 2e-5, 1.0)}


def anyview_config_json() -> dict:
    return json.loads((ANYVIEW / 'tiny_anyview_config.json').read_text())


def read_key_list(name: str) -> dict[str, tuple[int, ...]]:
    """Key -> shape from a golden `keys_*.txt` list (`key<TAB>(shape)<TAB>dtype`), file order."""
    out = {}
    for line in (ANYVIEW / ANYVIEW_KEY_LISTS[name]).read_text().splitlines():
        key, shape, _ = line.split('\t')
        out[key] = tuple(int(v) for v in shape.strip('()').split(',') if v.strip())
    return out


def anyview_key_shapes(name: str) -> dict[str, tuple[int, ...]]:
    """Checkpoint key -> shape for 'da3-anyview-tiny' (config json) or a golden key list."""
    if name == 'da3-anyview-tiny':
        return key_shapes('da3-anyview-tiny')
    return read_key_list(name)


@functools.lru_cache(maxsize=1)
def _anyview_tiny_state() -> dict[str, np.ndarray]:
    return rule_v1_state_dict(anyview_key_shapes('da3-anyview-tiny'), x1=True)


def anyview_state_dict(name: str = 'da3-anyview-tiny') -> dict[str, np.ndarray]:
    """rule-v1 + X1 checkpoint (HF key names, float32 numpy); the tiny one is cached."""
    if name == 'da3-anyview-tiny':
        return dict(_anyview_tiny_state())
    return rule_v1_state_dict(anyview_key_shapes(name), x1=True)


def anyview_golden(name: str) -> dict[str, np.ndarray]:
    with np.load(ANYVIEW / name) as z:
        return {k: z[k] for k in z.files}


def anyview_png(name: str) -> np.ndarray:
    bgr = cv2.imread(str(ANYVIEW / name), cv2.IMREAD_COLOR)
    assert bgr is not None, name
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def grid4(ours: np.ndarray, g: dict, ray: bool = False) -> np.ndarray:
    """Our full map (N, H, W, ...) at a grid4 fixture's stored rows / cols."""
    rows, cols = (g['ray_rows'], g['ray_cols']) if ray else (g['rows'], g['cols'])
    return ours[:, rows][:, :, cols]


def assert_anyview_close(ours: np.ndarray, ref: np.ndarray, kind: str) -> None:
    """The golden any-view README tolerances for one array kind."""
    if kind == 'intrinsics':
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-4, err_msg=kind)
        return
    rtol, k, floor = ANYVIEW_TOL[kind]
    atol = k * max(floor, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=atol, err_msg=kind)


def fill_rule_inplace(model, key_shapes: dict[str, tuple[int, ...]], x1: bool = True,
                      branch_prefixes: dict[str, str] | None = None) -> int:
    """Write rule-v1 (+ X1) values key by key into `model` (peak memory: the model + 1 tensor).

    For full-size models too large to hold twice (GIANT, NESTED). Key mapping as in
    `models/da3/checkpoint.py`; `branch_prefixes` maps checkpoint prefixes to module prefixes
    (NESTED: {'model.da3.': 'da3.', 'model.da3_metric.': 'da3_metric.'}). Strictness is checked
    separately (`fit_state_dict` on the key list). Returns the number of tensors written.
    """
    import torch

    from tt_depth_ros.models.da3.checkpoint import map_state_dict
    from tt_depth_ros.models.weight_rule import rule_v1_tensor

    prefixes = branch_prefixes or {'model.': ''}
    params = dict(model.named_parameters())
    written = 0
    with torch.no_grad():
        for key, shape in key_shapes.items():
            src = next(p for p in sorted(prefixes, key=len, reverse=True) if key.startswith(p))
            sub = model.get_submodule(prefixes[src].rstrip('.')) if prefixes[src] else model
            value = rule_v1_tensor(key, shape, x1=x1)
            mapped = map_state_dict({'model.' + key[len(src):]: value},
                                    anyview=sub.cfg.anyview)
            for name, t in mapped.items():
                params[prefixes[src] + name].copy_(t)
                written += 1
    return written
