"""SE(3) helpers in numpy: 4x4 transforms, quaternions (x, y, z, w), rotation angles.

Convention: T_a_b maps points in frame b to frame a (x_a = R x_b + t). Quaternions use the ROS
order (x, y, z, w). Written for the pose outputs of the pair node and the DUSt3R pose API.
"""
from __future__ import annotations

import numpy as np


def make_T(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """4x4 float64 transform from a 3x3 rotation and a 3-vector translation."""
    R = np.asarray(R, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64).reshape(-1)
    if R.shape != (3, 3) or t.shape != (3,):
        raise ValueError(f'make_T needs R (3, 3) and t (3,), got {R.shape} and {t.shape}')
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = t
    return T


def invert_T(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform (R^T, -R^T t)."""
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4):
        raise ValueError(f'invert_T needs a 4x4 matrix, got {T.shape}')
    R, t = T[:3, :3], T[:3, 3]
    return make_T(R.T, -R.T @ t)


def quat_from_R(R: np.ndarray) -> np.ndarray:
    """Rotation matrix -> unit quaternion (x, y, z, w) with w >= 0 (Shepperd's method)."""
    R = np.asarray(R, dtype=np.float64)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ValueError(f'quat_from_R needs a finite (3, 3) rotation, got shape {R.shape}')
    tr = np.trace(R)
    diag = np.diag(R)
    k = int(np.argmax([tr, *diag]))
    if k == 0:
        w = np.sqrt(max(1.0 + tr, 0.0)) / 2.0
        x = (R[2, 1] - R[1, 2]) / (4 * w)
        y = (R[0, 2] - R[2, 0]) / (4 * w)
        z = (R[1, 0] - R[0, 1]) / (4 * w)
    elif k == 1:
        x = np.sqrt(max(1.0 + R[0, 0] - R[1, 1] - R[2, 2], 0.0)) / 2.0
        w = (R[2, 1] - R[1, 2]) / (4 * x)
        y = (R[0, 1] + R[1, 0]) / (4 * x)
        z = (R[0, 2] + R[2, 0]) / (4 * x)
    elif k == 2:
        y = np.sqrt(max(1.0 + R[1, 1] - R[0, 0] - R[2, 2], 0.0)) / 2.0
        w = (R[0, 2] - R[2, 0]) / (4 * y)
        x = (R[0, 1] + R[1, 0]) / (4 * y)
        z = (R[1, 2] + R[2, 1]) / (4 * y)
    else:
        z = np.sqrt(max(1.0 + R[2, 2] - R[0, 0] - R[1, 1], 0.0)) / 2.0
        w = (R[1, 0] - R[0, 1]) / (4 * z)
        x = (R[0, 2] + R[2, 0]) / (4 * z)
        y = (R[1, 2] + R[2, 1]) / (4 * z)
    q = np.array([x, y, z, w])
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


def R_from_quat(q) -> np.ndarray:
    """Quaternion (x, y, z, w), normalised here, -> 3x3 rotation matrix."""
    q = np.asarray(q, dtype=np.float64).reshape(-1)
    n = np.linalg.norm(q) if q.shape == (4,) else 0.0
    if not n > 0 or not np.isfinite(n):
        raise ValueError(f'R_from_quat needs a non-zero finite (x, y, z, w), got {q.tolist()}')
    x, y, z, w = q / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def angle_deg(R: np.ndarray) -> float:
    """Rotation angle of R in degrees, via atan2 (precise near 0 and 180)."""
    R = np.asarray(R, dtype=np.float64)
    c = (np.trace(R) - 1.0) / 2.0
    s = np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2.0
    return float(np.degrees(np.arctan2(s, c)))


def interpolate_qt(q0: np.ndarray, t0: np.ndarray, q1: np.ndarray, t1: np.ndarray,
                   alpha: float) -> np.ndarray:
    """4x4 transform a fraction `alpha` of the way from (q0, t0) to (q1, t1).

    Slerp of the unit quaternions (x, y, z, w), lerp of the translations: what tf2 does between
    two stamped transforms of one edge; alpha 0 gives the first, 1 the second. The inputs are
    the form a TF buffer keeps per stamp, so that a lookup converts no matrices.
    """
    dot = float(np.dot(q0, q1))
    if dot < 0.0:
        q1, dot = -q1, -dot
    if dot > 0.9995:      # nearly equal: normalised lerp is exact enough and stable
        q = q0 + alpha * (q1 - q0)
    else:
        theta = np.arccos(np.clip(dot, -1.0, 1.0))
        q = (np.sin((1 - alpha) * theta) * q0 + np.sin(alpha * theta) * q1) / np.sin(theta)
    t = (1 - alpha) * t0 + alpha * t1
    return make_T(R_from_quat(q / np.linalg.norm(q)), t)


def frame_depth_in_own_camera(pts_in_key: np.ndarray, T_key_frame_units: np.ndarray) -> np.ndarray:
    """Depth (z) of view-2 points (given in the keyframe camera) in view 2's own camera, same units.

    Args:
        pts_in_key: (H, W, 3) pointmap of view 2 in camera 1 (DUSt3R head 2).
        T_key_frame_units: 4x4 pose of view 2 in view 1, same units as the pointmap.
    """
    R = T_key_frame_units[:3, :3]
    t = T_key_frame_units[:3, 3]
    # x_frame = R^T (x_key - t); only the z row is needed.
    return ((pts_in_key - t) @ R[:, 2]).astype(np.float32)
