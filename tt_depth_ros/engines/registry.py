"""Every model the package knows, once: name, family, kind, views, backends, weights, licence.

Every other list is derived from `MODELS`: the factory's builders and backend choice
(engines/factory.py), weight resolution (engines/weights.py), the licence opt-in
(engines/licence.py), the torch builders (engines/torch/), the predictors (pipelines/), the CLI
`--model` choices (tools/cli/) and the pair node's model checks (ros/pair/). The kind a model
is of is read here and nowhere else: builders put it into `EngineInfo.details` ('kind',
'is_metric'), which is what ROS code reads. What each kind means and gives is
models/kind.py `ModelKind`.

Weight pins (docs/da3.md "Published weight hashes", docs/dust3r.md §1): a `WeightSpec.sha256` is
either the full hex digest or a published prefix of it (12 hex digits); only those digits are
checked. A known hash pins the file whatever the revision, so a model with a hash and no pinned
revision downloads the default branch and verifies it.

No torch and no model code is imported here: ros/ reads this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tt_depth_ros.engines.base import ANY_VIEWS, BACKENDS
from tt_depth_ros.models.kind import ModelKind

FAMILIES = ('da3', 'dust3r')
OPT_IN_LICENCES = ('CC-BY-NC-4.0',)
"""Licences a model loads under only with the explicit opt-in (engines/licence.py): the
non-commercial DA3 checkpoints. DUSt3R's CC-BY-NC-SA-4.0 is recorded but has never been gated."""
TORCH_BACKENDS = tuple(b for b in BACKENDS if b.startswith('torch'))


@dataclass(frozen=True)
class WeightSpec:
    """Where a model's published weights live and how a file is recognised.

    Args:
        repo_id: Hugging Face repository.
        filename: File inside the repository.
        revision: Pinned commit; None = the default branch if `sha256` is known, else the
            caller must pass one.
        sha256: The file's SHA-256 as hex: the full digest or a published prefix (checked as a
            prefix); None = unknown (the file is not verified).
        note: Provenance of the pin.
    """

    repo_id: str
    filename: str
    revision: Optional[str]
    sha256: Optional[str]
    note: str = ''

    @property
    def sha256_is_prefix(self) -> bool:
        """Whether only the first digits of the hash are known (and checked)."""
        return self.sha256 is not None and len(self.sha256) < 64


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """One model.

    Args:
        name: The name every API, CLI and node parameter takes.
        family: 'da3' or 'dust3r' (FAMILIES): which builder and preprocessing.
        kind: What the depth output means (models/kind.py).
        views: Images per forward: 1, 2 (DUSt3R) or ANY_VIEWS (engines/base.py: any number).
        backends: Where it runs (engines/base.BACKENDS order).
        weights: Published weights; None = a test configuration (weights from a file or a
            state dict only).
        license: SPDX id of the weights' licence (model card); None for test configurations.
        params: Parameters in the checkpoint; None = not recorded.
        file_bytes: Published size of the fp32 weights file; None = not known.
        outputs: What the model predicts, in words.
    """

    name: str
    family: str
    kind: ModelKind
    views: int
    backends: tuple[str, ...]
    weights: Optional[WeightSpec]
    license: Optional[str]
    params: Optional[int]
    file_bytes: Optional[int]
    outputs: str

    @property
    def is_metric(self) -> bool:
        """Whether the depth output is in metres."""
        return self.kind.is_metric

    @property
    def multi_view(self) -> bool:
        """Any-view or NESTED: one forward over any number of views, camera estimates."""
        return self.kind.multi_view

    @property
    def test_only(self) -> bool:
        """A test configuration without published weights."""
        return self.weights is None

    @property
    def needs_licence_opt_in(self) -> bool:
        """Loading needs the explicit licence opt-in (OPT_IN_LICENCES, engines/licence.py)."""
        return self.license in OPT_IN_LICENCES

    def details(self) -> dict:
        """What every engine of this model reports in `EngineInfo.details`."""
        return {'kind': self.kind.value, 'is_metric': self.is_metric}


_NO_PIN = ('no pinned revision or SHA-256 known (no hub access when registered): '
           'pass revision=<commit>')
_PREFIX = ('SHA-256 prefix from a public model card that checks the authors\' files '
           '(docs/da3.md "Published weight hashes")')
_METRIC = 'metric depth (m, needs K), sky'
_ANYVIEW = 'relative depth + confidence, rays, camera pose + intrinsics (multi-view)'
_POINTMAP = "two scale-free pointmaps + confidence in camera 1's frame"


def _da3_hub(repo: str, sha256: Optional[str] = None) -> WeightSpec:
    return WeightSpec(f'depth-anything/{repo}', 'model.safetensors', revision=None,
                      sha256=sha256, note=_PREFIX if sha256 else _NO_PIN)


MODELS: dict[str, ModelSpec] = {m.name: m for m in (
    # The DA3METRIC-LARGE pin (commit, full SHA-256, 1,336,734,448 bytes = fp32) is taken from a
    # third-party project's checksum-pinned download; its first 12 digits are the published ones.
    ModelSpec(
        name='da3metric-large', family='da3', kind=ModelKind.METRIC, views=1, backends=BACKENDS,
        weights=WeightSpec(
            'depth-anything/DA3METRIC-LARGE', 'model.safetensors',
            revision='4010e39f3634a45bc60553321fb49fb760bd594e',
            sha256='bbea5b0b3ee389849cffa7ddae89de064a90abd2b055fc5aa99aac68db324776',
            note='pin from a third-party checksum list; its hash starts with the published '
                 'prefix'),
        license='Apache-2.0', params=334_171_394, file_bytes=1_336_734_448, outputs=_METRIC),
    ModelSpec(
        name='da3mono-large', family='da3', kind=ModelKind.MONO, views=1, backends=BACKENDS,
        weights=_da3_hub('DA3MONO-LARGE', '7a799a7f95eb'), license='Apache-2.0',
        params=334_171_394, file_bytes=None, outputs='relative depth, sky'),
    ModelSpec(
        name='da3-small', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub('DA3-SMALL'), license='Apache-2.0',
        params=34_299_463, file_bytes=137_248_940, outputs=_ANYVIEW),
    ModelSpec(
        name='da3-base', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub('DA3-BASE'), license='Apache-2.0',
        params=135_366_599, file_bytes=541_518_028, outputs=_ANYVIEW),
    ModelSpec(
        name='da3-large-1.1', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub('DA3-LARGE-1.1', '739905c423cf'),
        license='CC-BY-NC-4.0', params=410_941_767, file_bytes=1_643_843_860,
        outputs=_ANYVIEW),
    ModelSpec(
        name='da3-giant-1.1', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub('DA3-GIANT-1.1', '1e47a08338ca'),
        license='CC-BY-NC-4.0', params=1_355_674_125, file_bytes=None, outputs=_ANYVIEW),
    ModelSpec(
        name='da3nested-giant-large-1.1', family='da3', kind=ModelKind.NESTED, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub('DA3NESTED-GIANT-LARGE-1.1', '8ebe871a022e'),
        license='CC-BY-NC-4.0', params=1_689_845_519, file_bytes=None,
        outputs='metric depth (m) + confidence, sky, camera pose (m) + intrinsics (multi-view)'),
    # the revision the tt port uses (docs/dust3r.md §1); its SHA-256 could not be recorded here
    ModelSpec(
        name='dust3r-vitl-512-dpt', family='dust3r', kind=ModelKind.POINTMAP, views=2,
        backends=BACKENDS, weights=WeightSpec(
            'naver/DUSt3R_ViTLarge_BaseDecoder_512_dpt', 'model.safetensors',
            revision='61c57447d7b0adc8a1a30b2b0adec7a8935aa2a3', sha256=None,
            note='revision pinned as in the tt port; its SHA-256 could not be recorded here (no '
                 'hub access), so the file is not hash-verified'),
        license='CC-BY-NC-SA-4.0', params=571_171_208, file_bytes=None, outputs=_POINTMAP),
    # test configurations (test/data/*/tiny*_config.json): same code paths, tiny dimensions
    ModelSpec(
        name='da3metric-tiny', family='da3', kind=ModelKind.METRIC, views=1, backends=BACKENDS,
        weights=None, license=None, params=None, file_bytes=None, outputs=_METRIC),
    ModelSpec(
        name='da3-anyview-tiny', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=None, license=None, params=None, file_bytes=None,
        outputs=_ANYVIEW),
    ModelSpec(
        name='dust3r-tiny', family='dust3r', kind=ModelKind.POINTMAP, views=2, backends=BACKENDS,
        weights=None, license=None, params=None, file_bytes=None, outputs=_POINTMAP),
)}
"""Model name -> everything known about it (published models first, then test configs)."""


def model(name: str) -> ModelSpec:
    """The registry entry of `name`; ValueError naming the known models otherwise."""
    spec = MODELS.get(name)
    if spec is None:
        raise ValueError(f'unknown model {name!r}; known: {sorted(MODELS)}')
    return spec


def names(*, family: Optional[str] = None, kinds: Optional[tuple[ModelKind, ...]] = None,
          published: Optional[bool] = None) -> tuple[str, ...]:
    """Model names in table order, filtered by family, kinds and whether weights are published."""
    return tuple(m.name for m in MODELS.values()
                 if (family is None or m.family == family)
                 and (kinds is None or m.kind in kinds)
                 and (published is None or published != m.test_only))
