"""Perfect DA3 ray maps of pinhole cameras, for tests that feed known geometry to the ray PnP.

Written from upstream's description, not from tt_depth_ros.geometry.pose.ray_pnp: the ray grid is
(8 h/14, 8 w/14); cell k of n covers image [k, k + 1] * size / n (upstream's normalised ray grid),
so its centre is network pixel (k + 0.5) * size / n - 0.5 (pixel centres at integers). Channels
0..2 are the direction in the world frame, 3..5 the camera centre.
"""
from __future__ import annotations

import numpy as np

LENGTHS = ('paper', 'unit', 'random')
"""Direction lengths: the paper's R K^-1 p (camera z = 1), unit vectors, or a random positive factor
per cell - the ray PnP must not depend on which."""


def ray_grid_shape(net_hw) -> tuple[int, int]:
    """(hr, wr) of the DualDPT ray output for a network input of net_hw."""
    return 8 * (int(net_hw[0]) // 14), 8 * (int(net_hw[1]) // 14)


def cell_pixel_indices(net_hw) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the network pixel holding each ray cell's centre."""
    h, w = (int(v) for v in net_hw)
    hr, wr = ray_grid_shape(net_hw)
    rows = ((np.arange(hr) + 0.5) * h / hr).astype(int)
    return rows, ((np.arange(wr) + 0.5) * w / wr).astype(int)


def pinhole_ray_map(K_net, net_hw, T_world_cam, *, length: str = 'paper', unit: float = 1.0,
                    seed: int = 0) -> np.ndarray:
    """(hr, wr, 6) float32 ray map of a pinhole camera at T_world_cam; lengths divided by `unit`."""
    K = np.asarray(K_net, np.float64)
    T = np.asarray(T_world_cam, np.float64)
    h, w = net_hw
    hr, wr = ray_grid_shape(net_hw)
    u = (np.arange(wr) + 0.5) * w / wr - 0.5
    v = (np.arange(hr) + 0.5) * h / hr - 0.5
    uu, vv = np.meshgrid(u, v)
    cam = np.stack([(uu - K[0, 2]) / K[0, 0], (vv - K[1, 2]) / K[1, 1], np.ones_like(uu)], -1)
    if length == 'unit':
        cam /= np.linalg.norm(cam, axis=-1, keepdims=True)
    elif length == 'random':
        cam *= np.random.default_rng(seed).uniform(0.3, 3.0, (hr, wr, 1))
    elif length != 'paper':
        raise ValueError(f'length {length!r} not in {LENGTHS}')
    direction = cam @ T[:3, :3].T
    origin = np.broadcast_to(T[:3, 3] / unit, direction.shape)
    return np.concatenate([direction, origin], -1).astype(np.float32)
