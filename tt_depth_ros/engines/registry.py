"""Every model the package knows, once: name, family, kind, views, backends, weights, licence.

Every other list is derived from `MODELS`: the factory's builders and backend choice
(engines/factory.py), weight resolution (engines/weights.py), the licence opt-in
(engines/licence.py), the torch builders (engines/torch/), the predictors (pipelines/), the CLI
`--model` choices (tools/cli/) and the pair node's model checks (ros/pair/). The kind a model
is of is read here and nowhere else: builders put it into `EngineInfo.details` ('kind',
'is_metric'), which is what ROS code reads. What each kind means and gives is
models/kind.py `ModelKind`.

Weight pins (docs/da3.md "Published weight hashes", docs/dust3r.md §1, each row checked against
public sources listed there): every published model names its repository, the commit it is
downloaded at, and the full SHA-256 and byte size of the file at that commit. engines/weights.py
checks a file against them (size first, then the hash) whenever it comes from that commit.

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
    """Where a model's published weights live and how the file is recognised.

    Args:
        repo_id: Hugging Face repository.
        filename: File inside the repository.
        revision: Pinned commit: what a download fetches and what `sha256` / `size` describe.
            None = nothing pinned (the caller must pass a revision; the file is not verified).
        sha256: Full hex SHA-256 of the file at `revision`; None = not known.
        size: Size of that file in bytes; None = not known.
        note: Provenance of the pin.
    """

    repo_id: str
    filename: str
    revision: Optional[str]
    sha256: Optional[str]
    size: Optional[int] = None
    note: str = ''

    def __post_init__(self):
        if self.sha256 is not None and (len(self.sha256) != 64
                                        or self.sha256.strip('0123456789abcdef')):
            raise ValueError(f'{self.repo_id}: sha256 must be 64 lower-case hex digits, got '
                             f'{self.sha256!r}')
        if self.size is not None and (not isinstance(self.size, int) or self.size <= 0):
            raise ValueError(f'{self.repo_id}: size must be a positive number of bytes, got '
                             f'{self.size!r}')


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
    outputs: str

    @property
    def file_bytes(self) -> Optional[int]:
        """Size of the published weights file (its pin, `WeightSpec.size`); None = not known."""
        return self.weights.size if self.weights is not None else None

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
        return {'kind': self.kind.value, 'is_metric': self.kind.is_metric}


_PINNED = ('revision, SHA-256 and size of model.safetensors as recorded by independent public '
           'projects (docs/da3.md "Published weight hashes")')
_METRIC = 'metric depth (m, needs K), sky'
_ANYVIEW = 'relative depth + confidence, rays, camera pose + intrinsics (multi-view)'
_POINTMAP = "two scale-free pointmaps + confidence in camera 1's frame"


def _da3_hub(repo: str, *, revision: str, sha256: str, size: Optional[int]) -> WeightSpec:
    return WeightSpec(f'depth-anything/{repo}', 'model.safetensors', revision=revision,
                      sha256=sha256, size=size, note=_PINNED)


MODELS: dict[str, ModelSpec] = {m.name: m for m in (
    ModelSpec(
        name='da3metric-large', family='da3', kind=ModelKind.METRIC, views=1, backends=BACKENDS,
        weights=_da3_hub(
            'DA3METRIC-LARGE', revision='4010e39f3634a45bc60553321fb49fb760bd594e',
            sha256='bbea5b0b3ee389849cffa7ddae89de064a90abd2b055fc5aa99aac68db324776',
            size=1_336_734_448),
        license='Apache-2.0', params=334_171_394, outputs=_METRIC),
    ModelSpec(
        name='da3mono-large', family='da3', kind=ModelKind.MONO, views=1, backends=BACKENDS,
        weights=_da3_hub(
            'DA3MONO-LARGE', revision='f465978e618db8cc79c83b8bbf24964857db1875',
            sha256='7a799a7f95eb8d4c404c2ca8be3dc3276b350a417ddc4420db72ba850cc0e960',
            size=None),   # no public source states its size
        license='Apache-2.0', params=334_171_394, outputs='relative depth, sky'),
    ModelSpec(
        name='da3-small', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub(
            'DA3-SMALL', revision='e08cab65ca0ec38e7826075418411ab90cab4da3',
            sha256='364492e38a3a06d221ac75da7f6621ada3f2361cd24fde11ba79091e9f40efcf',
            size=137_248_940),
        license='Apache-2.0', params=34_299_463, outputs=_ANYVIEW),
    ModelSpec(
        name='da3-base', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub(
            'DA3-BASE', revision='f4a6c9b3c95e41c82048423d3493a81ec3fa810e',
            sha256='e01067dc1659613083d9145a9a2547ccdbe6ccbbf83c4fe7b3e8a4e2bdae78b5',
            size=541_518_028),
        license='Apache-2.0', params=135_366_599, outputs=_ANYVIEW),
    ModelSpec(
        name='da3-large-1.1', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub(
            'DA3-LARGE-1.1', revision='0e109ae307c5982f319a67cf6f9f99ccdc0ec97c',
            sha256='739905c423cf0d6ccaf9e61a8401d82ba1ac32d7f4d3ee6dca8f92b377633f64',
            size=1_643_843_860),
        license='CC-BY-NC-4.0', params=410_941_767, outputs=_ANYVIEW),
    ModelSpec(
        name='da3-giant-1.1', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub(
            'DA3-GIANT-1.1', revision='72ee9f89ce4e50d704e9d55ee9c646ec8dc25a19',
            sha256='1e47a08338ca73a6d6a21d37fd060b26b993b672bc6ddf6295fe474df2592001',
            size=5_422_814_644),
        license='CC-BY-NC-4.0', params=1_355_674_125, outputs=_ANYVIEW),
    ModelSpec(
        name='da3nested-giant-large-1.1', family='da3', kind=ModelKind.NESTED, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=_da3_hub(
            'DA3NESTED-GIANT-LARGE-1.1', revision='b2359bdf726fb44ef62acca04d629dcf158053e7',
            sha256='8ebe871a022ed58d2fc8fdfb2ebdb31d57b60fe39611c849095851a7b7c6020c',
            size=6_759_558_100),
        license='CC-BY-NC-4.0', params=1_689_845_519,
        outputs='metric depth (m) + confidence, sky, camera pose (m) + intrinsics (multi-view)'),
    ModelSpec(
        name='dust3r-vitl-512-dpt', family='dust3r', kind=ModelKind.POINTMAP, views=2,
        backends=BACKENDS, weights=WeightSpec(
            'naver/DUSt3R_ViTLarge_BaseDecoder_512_dpt', 'model.safetensors',
            revision='61c57447d7b0adc8a1a30b2b0adec7a8935aa2a3',
            sha256='7c300a89534113436bde52732d3151212bcbd90f0aa3c8d1496f86d84bfe4b42',
            size=2_284_790_056,
            note='the revision the tt port uses; SHA-256 and size as recorded by independent '
                 'public projects (docs/dust3r.md §1)'),
        license='CC-BY-NC-SA-4.0', params=571_171_208, outputs=_POINTMAP),
    # test configurations (test/data/*/tiny*_config.json): same code paths, tiny dimensions
    ModelSpec(
        name='da3metric-tiny', family='da3', kind=ModelKind.METRIC, views=1, backends=BACKENDS,
        weights=None, license=None, params=None, outputs=_METRIC),
    ModelSpec(
        name='da3-anyview-tiny', family='da3', kind=ModelKind.ANYVIEW, views=ANY_VIEWS,
        backends=TORCH_BACKENDS, weights=None, license=None, params=None,
        outputs=_ANYVIEW),
    ModelSpec(
        name='dust3r-tiny', family='dust3r', kind=ModelKind.POINTMAP, views=2, backends=BACKENDS,
        weights=None, license=None, params=None, outputs=_POINTMAP),
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
