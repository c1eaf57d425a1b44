"""DA3 camera decoder and pose encoding (upstream `model/cam_dec.py`, `utils/geometry`).

The decoder maps the raw 2C camera token of each view to `pose_enc` = [t(3), q(4) xyzw, fov_h,
fov_w]; `pose_to_extrinsics` / `fov_to_intrinsics` turn it into world-to-camera [R^T | -R^T t]
(3x4) and pinhole K at the network input size (cx, cy = W/2, H/2 exactly; index 7 is the vertical
FOV -> fy). The quaternion is not normalised first: s = 2/(q.q) does it implicitly.
"""
from __future__ import annotations

import torch
from torch import nn


class CameraDecoder(nn.Module):
    """`cam_dec`: MLP(2C, 2C, ReLU x2) -> fc_t (3), fc_qvec (4), fc_fov (2, ReLU).

    Args:
        dim: Camera token width (2C).
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim),
                                      nn.ReLU())
        self.fc_t = nn.Linear(dim, 3)
        self.fc_qvec = nn.Linear(dim, 4)
        self.fc_fov = nn.Sequential(nn.Linear(dim, 2), nn.ReLU())

    def forward(self, token: torch.Tensor) -> torch.Tensor:
        """(S, 2C) camera tokens -> (S, 9) pose encoding, fp32 (upstream casts to float)."""
        f = self.backbone(token.float())
        return torch.cat([self.fc_t(f), self.fc_qvec(f), self.fc_fov(f)], dim=-1)


def quat_to_rotation(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) xyzw quaternions (any norm) -> (..., 3, 3) rotation matrices."""
    x, y, z, w = q.unbind(-1)
    s = 2.0 / (q * q).sum(-1)
    rows = [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w),
            s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w),
            s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)]
    return torch.stack(rows, dim=-1).reshape(*q.shape[:-1], 3, 3)


def pose_to_extrinsics(pose_enc: torch.Tensor) -> torch.Tensor:
    """(S, 9) pose encoding -> (S, 3, 4) world-to-camera [R^T | -R^T t] ([R | t] cam-to-world)."""
    t = pose_enc[:, :3]
    rt = quat_to_rotation(pose_enc[:, 3:7]).transpose(-1, -2)
    return torch.cat([rt, -(rt @ t[..., None])], dim=-1)


def fov_to_intrinsics(pose_enc: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """(S, 9) pose encoding -> (S, 3, 3) K for an h x w network input."""
    fov_h, fov_w = pose_enc[:, 7], pose_enc[:, 8]
    fy = (h / 2) / torch.clamp(torch.tan(fov_h / 2), min=1e-6)
    fx = (w / 2) / torch.clamp(torch.tan(fov_w / 2), min=1e-6)
    # built by stacking, not by index-assigning into zeros: the same values, and an exported
    # graph gets a Concat instead of ScatterND (engines/export/)
    zero, one = torch.zeros_like(fx), torch.ones_like(fx)
    rows = [fx, zero, zero + w / 2, zero, fy, zero + h / 2, zero, zero, one]
    return torch.stack(rows, dim=-1).reshape(pose_enc.shape[0], 3, 3)
