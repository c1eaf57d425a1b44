"""Options every `tt-depth predict` model shares: which network, from where, on what."""
from __future__ import annotations

import argparse

from tt_depth_ros.engines.select import REQUESTS
from tt_depth_ros.engines.torch.presets import CHOICES as TORCH_DTYPES
from tt_depth_ros.engines.ttnn.precision import CHOICES as TTNN_PRECISIONS

# one --dtype for every backend: each takes its own names ('auto' and 'bfloat16' are both's)
PRECISION_CHOICES = TORCH_DTYPES + tuple(c for c in TTNN_PRECISIONS if c not in TORCH_DTYPES)


def add_engine_arguments(parser: argparse.ArgumentParser, models: tuple[str, ...], default: str,
                         *, model_help: str | None = None, dtype_help: str) -> None:
    """Add --model, --weights, --revision, --offline, --backend, --device-id and --dtype."""
    parser.add_argument('--model', default=default, choices=models, help=model_help)
    parser.add_argument('--weights', help='weights file (default: HF cache, else pinned download)')
    parser.add_argument('--revision', help='Hugging Face revision (default: the pinned one)')
    parser.add_argument('--offline', action='store_true', help='never download (HF_HUB_OFFLINE)')
    parser.add_argument('--backend', default='auto', choices=REQUESTS)
    parser.add_argument('--device-id', type=int, default=0)
    parser.add_argument('--dtype', choices=PRECISION_CHOICES, default='auto',
                        help=dtype_help + '; torch precision presets: docs/cpu-performance.md '
                        '"CPU presets"; ttnn: docs/ttnn-precision.md "Presets" (auto = '
                        'the model\'s default, fast = the speed design); a name the chosen '
                        'backend lacks is an error')
