"""Published weights and licences of the DA3 family beyond DA3METRIC/MONO-LARGE.

A separate table (merged into `engines/weights.REGISTRY` by `register()`, which engines/torch/da3.py
calls on import) so the registry module itself stays untouched.

Pins: no network to the Hugging Face hub was available when these entries were written, so no
commit and no SHA-256 could be verified for any of them: `revision=None` and `sha256=None` (a
download needs an explicit `revision=<commit>`, an already cached copy at that revision or an
explicit file). The file sizes below are the ones published for the fp32 `model.safetensors`
files (test/data/da3_anyview/README.md: the rule-v1 files of the same key layout are 592 header
bytes smaller, which confirms the layout); they are documentation, not a check.

Licences (model cards; docs/da3.md §1): DA3-SMALL and DA3-BASE are Apache-2.0 (as DA3METRIC-LARGE
and DA3MONO-LARGE); DA3-LARGE-1.1, DA3-GIANT-1.1 and DA3NESTED-GIANT-LARGE-1.1 are CC-BY-NC-4.0
(non-commercial). Loading a non-commercial model needs an explicit opt-in (`require_license`):
`accept_license=True`, or the environment variable TT_DEPTH_ACCEPT_NC_LICENSE=1, or the CLI flag
`--accept-nc-license`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from tt_depth_ros.engines.weights import REGISTRY, WeightSpec

ACCEPT_ENV = 'TT_DEPTH_ACCEPT_NC_LICENSE'
NON_COMMERCIAL = ('CC-BY-NC-4.0',)
_NO_PIN = 'no pinned revision verified (no hub access when registered): pass revision=<commit>'


class LicenseNotAcceptedError(PermissionError):
    """A non-commercial checkpoint was requested without the explicit opt-in."""


@dataclass(frozen=True)
class FamilyModel:
    """One published family member.

    Args:
        name: Registry / model name.
        spec: Where the weights live (engines/weights.WeightSpec).
        license: SPDX id of the weight licence (model card).
        params: Parameters in the checkpoint (key list sum).
        file_bytes: Published size of the fp32 safetensors file; None = not known.
        outputs: What the model predicts.
    """

    name: str
    spec: WeightSpec
    license: str
    params: int
    file_bytes: Optional[int]
    outputs: str

    @property
    def non_commercial(self) -> bool:
        return self.license in NON_COMMERCIAL


def _hf(repo: str) -> WeightSpec:
    return WeightSpec(f'depth-anything/{repo}', 'model.safetensors', revision=None, sha256=None,
                      note=_NO_PIN)


_ANYVIEW = 'relative depth + confidence, rays, camera pose + intrinsics (multi-view)'
FAMILY: dict[str, FamilyModel] = {m.name: m for m in (
    FamilyModel('da3-small', _hf('DA3-SMALL'), 'Apache-2.0', 34_299_463, 137_248_940, _ANYVIEW),
    FamilyModel('da3-base', _hf('DA3-BASE'), 'Apache-2.0', 135_366_599, 541_518_028, _ANYVIEW),
    FamilyModel('da3-large-1.1', _hf('DA3-LARGE-1.1'), 'CC-BY-NC-4.0', 410_941_767,
                1_643_843_860, _ANYVIEW),
    FamilyModel('da3-giant-1.1', _hf('DA3-GIANT-1.1'), 'CC-BY-NC-4.0', 1_355_674_125, None,
                _ANYVIEW),
    FamilyModel('da3nested-giant-large-1.1', _hf('DA3NESTED-GIANT-LARGE-1.1'), 'CC-BY-NC-4.0',
                1_689_845_519, None,
                'metric depth (m) + confidence, sky, camera pose (m) + intrinsics (multi-view)'),
)}
"""Family members with published weights (the tiny any-view config is test-only)."""
TEST_ONLY = ('da3-anyview-tiny',)


def register() -> None:
    """Add the family's WeightSpecs to engines/weights.REGISTRY (idempotent)."""
    for m in FAMILY.values():
        REGISTRY.setdefault(m.name, m.spec)


def _env_accepts() -> bool:
    return os.environ.get(ACCEPT_ENV, '').strip().lower() in ('1', 'true', 'yes', 'on')


def require_license(model: str, accept_license: Optional[bool] = None) -> None:
    """Refuse a non-commercial model unless accepted (argument, else TT_DEPTH_ACCEPT_NC_LICENSE).

    Raises:
        LicenseNotAcceptedError: Says which licence, why, and the three ways to opt in.
    """
    m = FAMILY.get(model)
    if m is None or not m.non_commercial:
        return
    accepted = _env_accepts() if accept_license is None else bool(accept_license)
    if not accepted:
        raise LicenseNotAcceptedError(
            f'{model} ({m.spec.repo_id}) is released under {m.license}: non-commercial use '
            'only. Accept it explicitly with accept_license=True, the environment variable '
            f'{ACCEPT_ENV}=1 or the CLI flag --accept-nc-license; for commercial use choose an '
            'Apache-2.0 model (da3-small, da3-base, da3metric-large, da3mono-large).')
