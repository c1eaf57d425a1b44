"""Relative pose from DA3's ray map by PnP-RANSAC: the any-view pair node's `pose_source: pnp`.

The DualDPT head's aux branch predicts, per cell of an (hr, wr) = (8 h/14, 8 w/14) grid, a ray
(channels 0..2 = direction, 3..5 = origin, in the network's world frame and the depth's unit)
and a ray confidence (test/data/da3_anyview/README.md "DualDPT head"). This is an estimate of the
cameras that does not use the camera decoder, so PnP on it is an independent pose.

What is relied on, and what is deliberately not:

* Channels 0..2 are the direction and 3..5 the origin, as upstream's own ray-to-camera code reads
  them (`use_ray_pose`: rotation from the directions, camera centre = mean of the origins).
* The direction is used only up to a positive factor. Upstream's ray-to-camera code divides by
  its z, and the public sources disagree on its length (the paper's d = R K^-1 p versus unit
  vectors elsewhere: ByteDance-Seed/Depth-Anything-3 issues #101, #124, #127). Our fixtures use
  synthetic weights, so they cannot settle it either. So each cell's point is built from the
  unit direction and the length of that pixel's ray to planar depth D:

      X_world = s_o * origin + D * |K^-1 (u, v, 1)| * direction / |direction|

  D is DA3's planar (z) depth, the quantity the depth outputs publish (REP 118). K is the
  camera's intrinsics on the network grid (CameraInfo when known, else the decoder's estimate).
  s_o brings the origins into the depth's unit (NESTED: its metric scale factor, 1 otherwise).
* Cell (i, j) is network pixel u = (j + 0.5) w / wr - 0.5, v = (i + 0.5) h / hr - 0.5 (pixel
  centres at integers), the cell centres upstream's ray-to-camera code uses (its normalised image
  grid). The depth is sampled there bilinearly. The alternative, the head's align_corners
  upsampling, differs by at most 0.375 network pixels.

Each view's points give that camera's pose in the network world by PnP (geometry.pose.pnp, SQPnP
RANSAC on the ray grid, threshold in network pixels). Then T_1<-2 = inv(T_w<-1) T_w<-2, so the
world frame (the reference view the network picked, or any other frame) drops out.
"""
from __future__ import annotations

import dataclasses

import cv2
import numpy as np

from tt_depth_ros.geometry.pose.pnp import PoseResult, solve_relative_pose
from tt_depth_ros.geometry.pose.se3 import invert_T

RAY_CHANNELS = 6


def ray_cell_pixels(ray_hw: tuple[int, int], net_hw: tuple[int, int]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(hr, wr) network-pixel coordinates u, v of the ray cells (module docstring), float32."""
    hr, wr = (int(v) for v in ray_hw)
    h, w = (int(v) for v in net_hw)
    u = (np.arange(wr, dtype=np.float64) + 0.5) * (w / wr) - 0.5
    v = (np.arange(hr, dtype=np.float64) + 0.5) * (h / hr) - 0.5
    uu, vv = np.meshgrid(u, v)
    return uu.astype(np.float32), vv.astype(np.float32)


def ray_grid_K(K_net: np.ndarray, ray_hw: tuple[int, int], net_hw: tuple[int, int]) -> np.ndarray:
    """K whose pixel coordinates are the ray cells' indices (column j, row i)."""
    sx = net_hw[1] / ray_hw[1]
    sy = net_hw[0] / ray_hw[0]
    K = np.asarray(K_net, dtype=np.float64)
    return np.array([[K[0, 0] / sx, K[0, 1] / sx, (K[0, 2] + 0.5) / sx - 0.5],
                     [0.0, K[1, 1] / sy, (K[1, 2] + 0.5) / sy - 0.5],
                     [0.0, 0.0, 1.0]])


def _sample(image: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bilinear samples of a (h, w) map at (u, v); NaN outside the map (never extrapolated)."""
    return cv2.remap(np.asarray(image, np.float32), u, v, cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_CONSTANT, borderValue=float('nan'))


def ray_points(ray: np.ndarray, depth: np.ndarray, K_net: np.ndarray,
               origin_scale: float = 1.0) -> np.ndarray:
    """(hr, wr, 3) float64 world points of one view's ray cells; NaN where undefined.

    Args:
        ray: (hr, wr, 6) direction (0..2) and origin (3..5) per cell.
        depth: (h, w) planar depth on the network grid, the unit of the origins x origin_scale.
        K_net: 3x3 intrinsics of the network grid.
        origin_scale: multiplies the origins into the depth's unit.
    """
    ray = np.asarray(ray, dtype=np.float64)
    if ray.ndim != 3 or ray.shape[-1] != RAY_CHANNELS:
        raise ValueError(f'ray map must be (hr, wr, {RAY_CHANNELS}), got {ray.shape}')
    K = np.asarray(K_net, dtype=np.float64)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
        raise ValueError(f'K_net must be a finite 3x3 with fx, fy > 0, got {K.tolist()}')
    u, v = ray_cell_pixels(ray.shape[:2], np.shape(depth))
    d = _sample(depth, u, v).astype(np.float64)
    x = (u - K[0, 2] - K[0, 1] * (v - K[1, 2]) / K[1, 1]) / K[0, 0]
    y = (v - K[1, 2]) / K[1, 1]
    ray_length = d * np.sqrt(x * x + y * y + 1.0)          # camera centre -> point
    direction = ray[..., :3]
    norm = np.linalg.norm(direction, axis=-1)
    with np.errstate(invalid='ignore', divide='ignore'):
        unit = direction / norm[..., None]
    pts = origin_scale * ray[..., 3:] + ray_length[..., None] * unit
    bad = ~(np.isfinite(d) & (d > 0) & (norm > 1e-9))
    pts[bad] = np.nan
    return pts


def camera_pose_from_rays(ray: np.ndarray, ray_conf: np.ndarray, depth: np.ndarray,
                          depth_conf: np.ndarray, K_net: np.ndarray, *, conf_threshold: float,
                          origin_scale: float = 1.0, reproj_px: float = 5.0,
                          iterations: int = 100, min_inliers: int = 50,
                          min_inlier_ratio: float = 0.1, focal_source: str = 'intrinsics'
                          ) -> PoseResult:
    """Camera -> network world pose of one view from its ray points (PoseResult in network px).

    A cell is used when both its ray confidence and the depth confidence there exceed
    `conf_threshold`.
    """
    hr, wr = np.shape(ray)[:2]
    net_hw = np.shape(depth)
    if np.shape(ray_conf) != (hr, wr):
        raise ValueError(f'ray_conf shape {np.shape(ray_conf)} != the ray map {(hr, wr)}')
    u, v = ray_cell_pixels((hr, wr), net_hw)
    conf = np.minimum(np.asarray(ray_conf, np.float32), _sample(depth_conf, u, v))
    conf = np.nan_to_num(conf, nan=0.0)
    pixel = net_hw[1] / wr                  # network pixels per ray cell (x)
    pose = solve_relative_pose(ray_points(ray, depth, K_net, origin_scale), conf,
                               ray_grid_K(K_net, (hr, wr), net_hw),
                               conf_threshold=conf_threshold, reproj_px=reproj_px / pixel,
                               iterations=iterations, min_inliers=min_inliers,
                               min_inlier_ratio=min_inlier_ratio, focal_source=focal_source)
    if pose.success:
        return dataclasses.replace(pose, reproj_error_px=pose.reproj_error_px * pixel)
    return pose


def relative_pose_from_rays(rays, ray_confs, depths, depth_confs, Ks_net, **pnp) -> PoseResult:
    """Camera 2 -> camera 1 (x1 = R x2 + t) from both views' ray maps; sequences of 2 per view.

    Keyword arguments go to `camera_pose_from_rays`. On success inliers / inlier ratio / points are
    the weaker view's, the reprojection error the larger one; a failure names the view.
    """
    poses = []
    for i in range(2):
        pose = camera_pose_from_rays(rays[i], ray_confs[i], depths[i], depth_confs[i],
                                     Ks_net[i], **pnp)
        if not pose.success:
            return dataclasses.replace(pose, reason=f'view {i + 1} ray PnP: {pose.reason}')
        poses.append(pose)
    T = invert_T(poses[0].T) @ poses[1].T
    return PoseResult(True, R=T[:3, :3], t=T[:3, 3], inliers=min(p.inliers for p in poses),
                      inlier_ratio=min(p.inlier_ratio for p in poses),
                      reproj_error_px=max(p.reproj_error_px for p in poses),
                      num_points=min(p.num_points for p in poses),
                      focal_source=poses[0].focal_source)
