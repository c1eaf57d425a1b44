"""Procedural test scene, ray-cast in numpy: images with exact metric depth and known poses.

The sample bag (tools/bag/sample.py) and the accuracy tests need pictures whose true depth and
camera motion are known exactly. A tiny ray caster over a ground plane and axis-aligned boxes gives
that without any asset or renderer: every pixel's ray is intersected analytically, so depth is exact
(planar z of the optical frame, REP 118) and rays that hit nothing are sky (+Inf).

Frames: the world is `odom` (REP 103: x forward, y left, z up); cameras are optical frames
(z forward, x right, y down). Poses are 4x4 `T_world_cam` (camera-frame points to world).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# World-from-optical rotation for a camera looking along world +x, level: optical z -> world x,
# optical x -> world -y, optical y -> world -z.
R_WORLD_OPTICAL_LEVEL = np.array([[0.0, 0.0, 1.0],
                                  [-1.0, 0.0, 0.0],
                                  [0.0, -1.0, 0.0]])


@dataclass(frozen=True)
class Box:
    """Axis-aligned box in the world frame, with a two-colour procedural texture."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    color_a: tuple[int, int, int]
    color_b: tuple[int, int, int]
    cell_m: float = 0.25  # checker cell size, metres


@dataclass(frozen=True)
class Scene:
    """Ground plane z=0 (a square of `ground_half_extent_m`), boxes, sky everywhere else."""

    boxes: tuple[Box, ...]
    ground_half_extent_m: float = 40.0
    ground_cell_m: float = 1.0


def default_scene() -> Scene:
    """A corridor of walls and boxes in front of the default trajectory, sky above."""
    boxes = (
        Box((0.0, 3.0, 0.0), (14.0, 3.4, 2.2), (180, 90, 60), (230, 160, 110), 0.4),    # left
        Box((0.0, -3.4, 0.0), (14.0, -3.0, 1.6), (70, 120, 170), (150, 190, 220), 0.3),  # right
        Box((6.0, -0.6, 0.0), (7.0, 0.4, 1.0), (200, 60, 60), (250, 220, 90), 0.2),
        Box((8.5, 1.0, 0.0), (9.5, 2.2, 1.6), (60, 160, 80), (200, 240, 200), 0.25),
        Box((10.0, -2.4, 0.0), (11.0, -1.2, 2.4), (120, 80, 160), (230, 200, 250), 0.3),
        Box((16.0, -5.0, 0.0), (16.6, 5.0, 3.0), (110, 110, 110), (210, 210, 190), 0.5),  # far wall
    )
    return Scene(boxes=boxes)


def intrinsics(width: int, height: int, hfov_deg: float = 70.0) -> np.ndarray:
    """Pinhole K (3x3 float64) with square pixels and the principal point at the image centre.

    Args:
        width: image width, pixels (> 0).
        height: image height, pixels (> 0).
        hfov_deg: horizontal field of view in degrees, in (0, 180).
    """
    if width <= 0 or height <= 0:
        raise ValueError(f'image size must be positive, got {width}x{height}')
    if not 0.0 < hfov_deg < 180.0:
        raise ValueError(f'hfov_deg must be in (0, 180), got {hfov_deg}')
    f = 0.5 * width / np.tan(np.radians(hfov_deg) / 2.0)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def camera_pose(position, yaw_rad: float = 0.0, pitch_rad: float = 0.0) -> np.ndarray:
    """T_world_cam (4x4) of an optical frame at `position`, yawed left, pitched down (radians)."""
    cy, sy = np.cos(yaw_rad), np.sin(yaw_rad)
    cp, sp = np.cos(pitch_rad), np.sin(pitch_rad)
    yaw = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])       # about world z
    pitch = np.array([[1.0, 0.0, 0.0], [0.0, cp, -sp], [0.0, sp, cp]])     # about optical x
    T = np.eye(4)
    T[:3, :3] = yaw @ R_WORLD_OPTICAL_LEVEL @ pitch
    T[:3, 3] = np.asarray(position, dtype=np.float64)
    return T


def default_trajectory(num_frames: int, step_m: float = 0.1) -> list[np.ndarray]:
    """Camera poses walking forward along the corridor with a gentle yaw sway; deterministic.

    Args:
        num_frames: number of poses (>= 1).
        step_m: forward distance between consecutive poses, metres.
    """
    if num_frames < 1:
        raise ValueError(f'num_frames must be >= 1, got {num_frames}')
    poses = []
    for i in range(num_frames):
        phase = 2.0 * np.pi * i / max(num_frames, 8)
        pos = (0.5 + i * step_m, 0.3 * np.sin(phase), 1.2 + 0.05 * np.sin(2 * phase))
        poses.append(camera_pose(pos, yaw_rad=0.12 * np.sin(phase), pitch_rad=0.08))
    return poses


def _ray_directions(K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Optical-frame ray per pixel with z = 1, so the hit parameter equals planar depth."""
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    x = (u - K[0, 2]) / K[0, 0]
    y = (v - K[1, 2]) / K[1, 1]
    return np.stack([x, y, np.ones_like(x)], axis=-1).reshape(-1, 3)


def _checker(a: np.ndarray, b: np.ndarray, cell: float) -> np.ndarray:
    """Checker pattern plus a smooth sinusoid (features for matching at any scale), in [0, 1]."""
    check = (np.floor(a / cell) + np.floor(b / cell)) % 2
    wave = 0.5 + 0.5 * np.sin(7.3 * a + 3.1 * np.sin(2.7 * b)) * np.cos(5.1 * b)
    return 0.7 * check + 0.3 * wave


def render(scene: Scene, K: np.ndarray, width: int, height: int,
           T_world_cam: np.ndarray, rays_cam: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Ray-cast one view.

    Args:
        scene: what to render.
        K: 3x3 pinhole intrinsics of the (undistorted) camera.
        width: image width, pixels.
        height: image height, pixels.
        T_world_cam: 4x4 pose of the optical frame in the world.
        rays_cam: optional (H*W, 3) optical-frame rays (x, y, 1) per pixel, row-major, instead
            of K's pinhole rays: a distorted lens (geometry/camera/rectify.pixel_rays).

    Returns:
        (rgb uint8 (H, W, 3), depth float32 (H, W)): depth is planar z in metres, +Inf for sky.
    """
    T = np.asarray(T_world_cam, dtype=np.float64)
    if T.shape != (4, 4):
        raise ValueError(f'T_world_cam must be 4x4, got {T.shape}')
    d_cam = (_ray_directions(np.asarray(K, dtype=np.float64), width, height) if rays_cam is None
             else np.asarray(rays_cam, dtype=np.float64).reshape(width * height, 3))
    d = d_cam @ T[:3, :3].T            # world ray directions, (N, 3); parameter t == planar depth
    o = T[:3, 3]
    n = d.shape[0]
    best_t = np.full(n, np.inf)
    color = np.zeros((n, 3))
    shade = np.ones(n)
    eps = 1e-6

    # Ground plane z = 0 within the square extent.
    with np.errstate(divide='ignore', invalid='ignore'):
        t = -o[2] / d[:, 2]
    hit = (d[:, 2] < -eps) & (t > eps)
    p = o + np.where(hit, t, 0.0)[:, None] * d
    half = scene.ground_half_extent_m
    hit &= (np.abs(p[:, 0]) <= half) & (np.abs(p[:, 1]) <= half)
    tex = _checker(p[:, 0], p[:, 1], scene.ground_cell_m)
    ground = np.array([90.0, 85.0, 70.0])[None] + tex[:, None] * np.array([[110.0, 105.0, 95.0]])
    best_t = np.where(hit, t, best_t)
    color = np.where(hit[:, None], ground, color)

    light = np.array([0.4, 0.3, 0.86])
    light /= np.linalg.norm(light)
    for box in scene.boxes:
        lo, hi = np.asarray(box.lo, float), np.asarray(box.hi, float)
        with np.errstate(divide='ignore', invalid='ignore'):
            inv = 1.0 / d
            t1 = (lo - o) * inv
            t2 = (hi - o) * inv
        t1 = np.where(np.isnan(t1), -np.inf, t1)
        t2 = np.where(np.isnan(t2), np.inf, t2)
        tmin = np.minimum(t1, t2)
        t_near = tmin.max(axis=1)
        t_far = np.maximum(t1, t2).min(axis=1)
        hit = (t_near <= t_far) & (t_near > eps) & (t_near < best_t)
        if not hit.any():
            continue
        axis = tmin.argmax(axis=1)                       # which slab gave the entry face
        p = o + np.where(hit, t_near, 0.0)[:, None] * d
        normal = np.zeros((n, 3))
        normal[np.arange(n), axis] = -np.sign(d[np.arange(n), axis])
        u_coord = np.where(axis == 0, p[:, 1], p[:, 0])
        v_coord = np.where(axis == 2, p[:, 1], p[:, 2])
        tex = _checker(u_coord, v_coord, box.cell_m)
        ca, cb = np.asarray(box.color_a, float), np.asarray(box.color_b, float)
        face = ca[None] + tex[:, None] * (cb - ca)[None]
        best_t = np.where(hit, t_near, best_t)
        color = np.where(hit[:, None], face, color)
        shade = np.where(hit, 0.55 + 0.45 * np.abs(normal @ light), shade)

    sky = ~np.isfinite(best_t)
    elev = np.clip(-d_cam[:, 1] / np.linalg.norm(d_cam, axis=1), -1.0, 1.0)
    sky_rgb = np.stack([150 - 60 * elev, 190 - 50 * elev, 235 + 0 * elev], axis=-1)
    color = np.where(sky[:, None], sky_rgb, color * shade[:, None])
    rgb = np.clip(np.rint(color), 0, 255).astype(np.uint8).reshape(height, width, 3)
    depth = best_t.astype(np.float32).reshape(height, width)
    return rgb, depth
