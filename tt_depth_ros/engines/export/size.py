"""The fixed input size of an exported DA3 file: `HxW`, both positive multiples of the 14 px patch.

An exported graph has one input size; the depth node and the API feed it what their resize picks
for the camera (geometry/preprocess/da3_preprocess.network_size), so `camera_network_size` gives the
size to export for a camera resolution.
"""
from __future__ import annotations

import re

from tt_depth_ros.geometry.preprocess.da3_preprocess import PATCH, network_size


def parse_size(text: str) -> tuple[int, int]:
    """'280x504' -> (280, 504); ValueError naming the input and the nearest valid sizes."""
    m = re.fullmatch(r'\s*(\d+)\s*[xX]\s*(\d+)\s*', str(text))
    if not m:
        raise ValueError(f'--size {text!r}: expected HxW, e.g. 280x504 (height x width, pixels)')
    h, w = int(m.group(1)), int(m.group(2))
    bad = []
    for name, v in (('height', h), ('width', w)):
        if v < PATCH or v % PATCH:
            lo = max(PATCH, v // PATCH * PATCH)
            bad.append(f'{name} {v} (nearest: {lo}' + (f' or {lo + PATCH})' if lo < v else ')'))
    if bad:
        raise ValueError(f'--size {h}x{w}: {"; ".join(bad)} is not a positive multiple of the '
                         f'{PATCH} px patch. Export at a size both sides of which are multiples '
                         f'of {PATCH}, e.g. 280x504.')
    return h, w


def camera_network_size(width: int, height: int, process_res: int = 504) -> tuple[int, int]:
    """The network (H, W) the DA3 frame path uses for a width x height camera image."""
    return network_size(int(width), int(height), int(process_res), None)
