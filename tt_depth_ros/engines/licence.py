"""The explicit opt-in for non-commercial checkpoints (licences in engines/registry.py).

DA3-LARGE-1.1, DA3-GIANT-1.1 and DA3NESTED-GIANT-LARGE-1.1 are CC-BY-NC-4.0 (model cards;
docs/da3.md §1): loading one needs `accept_license=True`, the environment variable
TT_DEPTH_ACCEPT_NC_LICENSE=1 or the CLI flag `--accept-nc-license`.
"""
from __future__ import annotations

import os
from typing import Optional

from tt_depth_ros.engines import registry

ACCEPT_ENV = 'TT_DEPTH_ACCEPT_NC_LICENSE'


class LicenseNotAcceptedError(PermissionError):
    """A non-commercial checkpoint was requested without the explicit opt-in."""


def _env_accepts() -> bool:
    return os.environ.get(ACCEPT_ENV, '').strip().lower() in ('1', 'true', 'yes', 'on')


def require_license(model: str, accept_license: Optional[bool] = None) -> None:
    """Refuse a non-commercial model unless accepted (argument, else TT_DEPTH_ACCEPT_NC_LICENSE).

    Raises:
        ValueError: Unknown model.
        LicenseNotAcceptedError: Says which licence, why, and the three ways to opt in.
    """
    spec = registry.model(model)
    if not spec.needs_licence_opt_in:
        return
    accepted = _env_accepts() if accept_license is None else bool(accept_license)
    if not accepted:
        free = ', '.join(m for m in registry.names(family=spec.family, published=True)
                         if not registry.model(m).needs_licence_opt_in)
        raise LicenseNotAcceptedError(
            f'{model} ({spec.weights.repo_id}) is released under {spec.license}: non-commercial '
            'use only. Accept it explicitly with accept_license=True, the environment variable '
            f'{ACCEPT_ENV}=1 or the CLI flag --accept-nc-license; for commercial use choose an '
            f'Apache-2.0 model ({free}).')
