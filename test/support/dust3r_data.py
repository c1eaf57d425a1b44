"""DUSt3R golden fixtures (test/data/dust3r, README there): key lists, rule-v1 weights, gates."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
from PIL import Image

from devtools.checkpoints import key_shapes
from devtools.rule_weights import rule_v1_state_dict

DATA = Path(__file__).resolve().parents[1] / 'data' / 'dust3r'


def tiny_key_shapes() -> dict[str, tuple[int, ...]]:
    return key_shapes('dust3r-tiny')


def full_keys() -> list[dict]:
    return json.loads((DATA / 'full_rule_v1_keys.json').read_text())['keys']


@functools.lru_cache(maxsize=1)
def tiny_state_dict() -> dict[str, np.ndarray]:
    """rule-v1 tiny weights (bit-exact with the golden tiny_weights.safetensors)."""
    return rule_v1_state_dict(tiny_key_shapes())


def pair_u8(hw: str) -> tuple[np.ndarray, np.ndarray]:
    """The pair-A PNG views for 'HxW', uint8 (H, W, 3) RGB."""
    return tuple(np.asarray(Image.open(DATA / f'pairA_{hw}_view{i}.png').convert('RGB'))
                 for i in (1, 2))


def normalise(u8: np.ndarray) -> np.ndarray:
    """(u8/255 - 0.5)/0.5 as float32 (1, 3, H, W), the fixtures' network input."""
    x = (u8.astype(np.float32) / np.float32(255.0) - np.float32(0.5)) / np.float32(0.5)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def fixture(name: str) -> dict[str, np.ndarray]:
    with np.load(DATA / f'{name}.npz') as z:
        return {k: z[k] for k in z.files}


def grid(ref: dict, full: np.ndarray, channels_first: bool) -> np.ndarray:
    """Subsample a full-res output onto a *_grid4 fixture's rows x cols (identity if complete)."""
    if 'rows' not in ref:
        return full
    rows, cols = ref['rows'], ref['cols']
    return full[:, :, rows][:, :, :, cols] if channels_first else full[:, rows][:, :, cols]


def batched(out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Engine outputs (no batch axis) -> the fixtures' batch-1 layout."""
    return {k: v[None] for k, v in out.items()}


def assert_gates(out: dict[str, np.ndarray], ref: dict[str, np.ndarray], raw: bool = True) -> None:
    """test/data/dust3r/README.md §5 gates on one forward (outputs named like the engine)."""
    for ours, theirs in (('raw1', 'raw1'), ('raw2', 'raw2')) if raw else ():
        a = grid(ref, out[ours], True)
        assert a.shape == ref[theirs].shape, (ours, a.shape, ref[theirs].shape)
        err = np.abs(a - ref[theirs]).max()
        assert np.allclose(a, ref[theirs], rtol=1e-4, atol=1e-4), f'{ours}: max abs err {err}'
    for ours, theirs in (('conf_1', 'conf1'), ('conf_2', 'conf2')):
        a = grid(ref, out[ours], False)
        assert a.shape == ref[theirs].shape, (ours, a.shape, ref[theirs].shape)
        assert np.allclose(a, ref[theirs], rtol=1e-4, atol=1e-5), ours
    for ours, theirs in (('pts3d_1', 'pts3d'), ('pts3d_2', 'pts3d_in_other_view')):
        a, r = grid(ref, out[ours], False), ref[theirs]
        assert a.shape == r.shape, (ours, a.shape, r.shape)
        d = np.linalg.norm(a.astype(np.float64) - r, axis=-1)
        n = np.linalg.norm(r.astype(np.float64), axis=-1)
        bad = d > 1e-4 + 2e-4 * n
        assert not bad.any(), f'{ours}: {bad.sum()} pixels over the per-pixel gate'
        rel_l2 = np.linalg.norm(a - r) / np.linalg.norm(r)
        assert rel_l2 <= 5e-5, f'{ours}: rel L2 {rel_l2}'
