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

from support.weight_rule import rule_v1_state_dict

DATA = Path(__file__).resolve().parents[1] / 'data' / 'da3'
TINY_SIZES = ('518x518', '280x504', '378x504')
PREPROC_CASES = ('1280x720', '640x480', '1242x375', '480x640', '300x200')


def tiny_config_json() -> dict:
    return json.loads((DATA / 'tiny_config.json').read_text())


def tiny_key_shapes() -> dict[str, tuple[int, ...]]:
    return {k: tuple(v) for k, v in tiny_config_json()['keys'].items()}


@functools.lru_cache(maxsize=1)
def _tiny_state() -> dict[str, np.ndarray]:
    return rule_v1_state_dict(tiny_key_shapes())


def tiny_state_dict() -> dict[str, np.ndarray]:
    """rule-v1 tiny checkpoint, HF key names (with `model.`), float32 numpy (fresh dict)."""
    return dict(_tiny_state())


def large_key_shapes(cfg=None) -> dict[str, tuple[int, ...]]:
    """HF key -> shape of the full-size model, from DA3Model on the meta device."""
    import torch

    from tt_depth_ros.models.da3.config import LARGE
    from tt_depth_ros.models.da3.model import DA3Model

    with torch.device('meta'):
        model = DA3Model(cfg or LARGE)
    return {'model.' + k: tuple(v.shape) for k, v in model.state_dict().items()}


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
