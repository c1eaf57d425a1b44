"""The scale oracle: a moving camera in the ray-cast scene, a jittering network scale, a LiDAR.

Ground truth for the scale sources and filter (pipelines/scale_filter.py), shared by
the engine double (support/fake_engines/scale_oracle.py, in the node's process), the tests that
drive the node and the pipeline, and benchmarks/bench_scale_stability.py:

- a robot (base_link) drives back and forth in the corridor of tools/eval/scene_render.py,
  swaying and yawing (odometry: `T_odom_base(t)`, any t); the camera and the LiDAR are mounted
  on it (static `T_BASE_OPTICAL`, `T_BASE_LIDAR`);
- the camera runs at `CAMERA_HZ`; frame i shows the scene from its pose at `frame_stamp(i)`;
- the "network" sees the true planar depth times s_i (`network_scale`): log-normal jitter
  (sigma `JITTER`) and, optionally, one x2 step from frame `step_at` on;
- the LiDAR scans at `LIDAR_HZ` with another phase (`lidar_stamps`): `LIDAR_FRACTION` of the
  camera's pixel count as rays inside the camera's view, cast from the LiDAR's pose at the
  scan's own stamp, 2 % range noise and 5 % gross outliers, points in the `lidar` frame.

Frames are marked with their index in pixel (0, 0) (support/fake_engines/pair_scene.py
`stamp_id`), so the engine double knows which frame it is shown.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from support.fake_engines.pair_scene import stamp_id
from tt_depth_ros.geometry.pose.se3 import make_T
from tt_depth_ros.tools.eval.scene_render import (
    R_WORLD_OPTICAL_LEVEL,
    default_scene,
    intrinsics,
    render,
)

ODOM, BASE, OPTICAL, LIDAR = 'odom', 'base_link', 'camera_optical_frame', 'lidar'
CAMERA_HZ = 10.0
LIDAR_HZ = 12.5
LIDAR_PHASE_S = 0.017
JITTER = 0.10
LIDAR_FRACTION = 0.035
RANGE_NOISE = 0.02
OUTLIER_FRACTION = 0.05
HFOV_DEG = 70.0
T0_NS = 100 * 10**9           # the sequence's first stamp (100 s: stamps stay positive)


def _rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# base_link (REP 103: x forward, z up) -> the camera's optical frame: 1.2 m up, pitched 0.08 rad
# down; the LiDAR 0.15 m above and 0.1 m behind the camera, level, REP 103 axes.
T_BASE_OPTICAL = make_T(R_WORLD_OPTICAL_LEVEL @ _rot_x(0.08), [0.0, 0.0, 1.2])
T_BASE_LIDAR = make_T(np.eye(3), [-0.1, 0.0, 1.35])
R_LIDAR_RAYS = R_WORLD_OPTICAL_LEVEL
"""The LiDAR's rays are cast in an optical-like frame (z forward) rotated into `lidar`."""


def T_odom_base(t_s: float) -> np.ndarray:
    """The robot's odometry pose at time t (seconds from the first frame): back and forth."""
    x = 2.0 + 1.5 * np.sin(2 * np.pi * t_s / 20.0)
    y = 0.3 * np.sin(2 * np.pi * t_s / 7.0)
    yaw = 0.12 * np.sin(2 * np.pi * t_s / 5.0)
    return make_T(_rot_z(yaw), [x, y, 0.0])


def frame_stamp(i: int) -> int:
    """Stamp (ns) of camera frame i."""
    return T0_NS + int(round(i * 1e9 / CAMERA_HZ))


def seconds(stamp_ns: int) -> float:
    """Seconds since the first frame."""
    return (stamp_ns - T0_NS) / 1e9


def camera_pose(stamp_ns: int) -> np.ndarray:
    """T_odom_optical at a stamp."""
    return T_odom_base(seconds(stamp_ns)) @ T_BASE_OPTICAL


def lidar_stamps(until_ns: int) -> list[int]:
    """Scan stamps (ns) from the sequence start up to `until_ns`."""
    period = 1e9 / LIDAR_HZ
    n = int((until_ns - T0_NS - LIDAR_PHASE_S * 1e9) // period) + 1
    return [T0_NS + int(round(LIDAR_PHASE_S * 1e9 + k * period)) for k in range(max(n, 0))]


@dataclass(frozen=True)
class Oracle:
    """One oracle sequence: camera size, network scale and LiDAR noise seeds, the step."""

    width: int = 112
    height: int = 84
    seed: int = 1
    step_at: int = -1          # frame index of the x2 step; -1 = none
    jitter: float = JITTER

    @property
    def K(self) -> np.ndarray:
        return intrinsics(self.width, self.height, HFOV_DEG)

    def network_scale(self, i: int) -> float:
        """s_i: the network's depth is the true depth times this."""
        rng = np.random.default_rng([self.seed, i])
        s = float(np.exp(self.jitter * rng.standard_normal()))
        return s * (2.0 if 0 <= self.step_at <= i else 1.0)

    def frame(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(rgb marked with i, true planar depth: +Inf sky) of camera frame i (read-only)."""
        return _frame(self.width, self.height, i)

    def scan(self, stamp_ns: int, outliers: bool = True, n_rays: int = 0) -> np.ndarray:
        """(N, 3) float32 LiDAR points in the `lidar` frame for the scan at `stamp_ns`.

        `n_rays`: how many rays (0: LIDAR_FRACTION of the camera's pixels); sky gives no point.
        """
        return _scan(self, stamp_ns, outliers, n_rays)

    def _scan(self, stamp_ns: int, outliers: bool, n_rays: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 7, stamp_ns // 1000])
        n = n_rays or int(LIDAR_FRACTION * self.width * self.height)
        K = self.K
        u = rng.uniform(-2.0, self.width + 1.0, n)       # a little wider than the image
        v = rng.uniform(-2.0, self.height + 1.0, n)
        rays = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones(n)], 1)
        T_odom_rays = T_odom_base(seconds(stamp_ns)) @ T_BASE_LIDAR @ make_T(R_LIDAR_RAYS,
                                                                             np.zeros(3))
        _, z = render(default_scene(), K, n, 1, T_odom_rays, rays_cam=rays)
        z = z.reshape(-1).astype(np.float64)
        hit = np.isfinite(z)
        factor = 1.0 + RANGE_NOISE * rng.standard_normal(n)
        if outliers:
            gross = rng.random(n) < OUTLIER_FRACTION
            factor = np.where(gross, rng.uniform(0.3, 3.0, n), factor)
        pts_rays = rays[hit] * (z[hit] * factor[hit])[:, None]
        return (pts_rays @ R_LIDAR_RAYS.T).astype(np.float32)     # rays frame -> lidar


@lru_cache(maxsize=512)
def _frame(width: int, height: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    rgb, depth = render(default_scene(), intrinsics(width, height, HFOV_DEG), width, height,
                        camera_pose(frame_stamp(i)))
    rgb = stamp_id(rgb, i)
    rgb.flags.writeable = depth.flags.writeable = False
    return rgb, depth


@lru_cache(maxsize=1024)
def _scan(oracle: Oracle, stamp_ns: int, outliers: bool, n_rays: int) -> np.ndarray:
    points = oracle._scan(stamp_ns, outliers, n_rays)
    points.flags.writeable = False
    return points


def log_jitter(scale: np.ndarray) -> float:
    """Frame-to-frame scale jitter: the std of the differences of log(scale)."""
    return float(np.std(np.diff(np.log(np.asarray(scale, np.float64)))))


def nearest_scan(stamp_ns: int, scan_stamps: list[int], tolerance_s: float) -> int | None:
    """The scan stamp nearest `stamp_ns` within the tolerance (the node's choice), else None."""
    if not scan_stamps:
        return None
    best = min(scan_stamps, key=lambda s: (abs(s - stamp_ns), s))
    return best if abs(best - stamp_ns) <= tolerance_s * 1e9 else None


def T_optical_lidar(image_ns: int, scan_ns: int) -> np.ndarray:
    """The scan's frame at its stamp in the camera at the image stamp (tf2 time travel)."""
    from tt_depth_ros.geometry.pose.se3 import invert_T
    return (invert_T(camera_pose(image_ns)) @ T_odom_base(seconds(scan_ns)) @ T_BASE_LIDAR)


class FramePath:
    """The oracle's frames through the real DA3 frame path.

    The engine double of `kind` at the camera's size, with the oracle camera's intrinsics (as
    the node has them from its CameraInfo).
    """

    def __init__(self, kind: str, oracle: Oracle) -> None:
        from support.fake_engines.scale_oracle import ScaleOracleEngine
        from tt_depth_ros.pipelines.depth import DA3FramePath, FrameIntrinsics, FrameOptions

        engine = ScaleOracleEngine(kind, oracle.width, oracle.height, oracle.seed,
                                   oracle.step_at, oracle.jitter)
        self.oracle, self.path = oracle, DA3FramePath(engine, kind)
        self.options = FrameOptions(fixed_size=(oracle.height, oracle.width),
                                    nested_focal_rescale=True)
        self.intrinsics = FrameIntrinsics('camera_info', oracle.K)

    def __call__(self, i: int):
        """The DepthFrame of frame i (pipelines/depth.py)."""
        rgb, _ = self.oracle.frame(i)
        return self.path(np.array(rgb), self.intrinsics, self.options)


@dataclass
class SequenceResult:
    """Per frame: the network's scale s_i, the scale applied (NaN: none) and its state."""

    raw: np.ndarray
    applied: np.ndarray
    states: list
    last: object            # the last frame's pipelines.depth_scale.ScaledDepth

    @property
    def error(self) -> np.ndarray:
        """Published / true depth per frame: s_i x the applied scale (1 = exact)."""
        return self.raw * self.applied


def run_sequence(kind: str, oracle: Oracle, frames: int, settings, *, min_confidence=0.0,
                 scans_until: int | None = None, tolerance_s: float = 0.05,
                 outliers: bool = True) -> SequenceResult:
    """The oracle sequence through the real frame path and scale stage, ROS-free.

    The engine double (support/fake_engines/scale_oracle.py) of `kind` under DA3FramePath with
    the oracle camera's intrinsics, then pipelines/depth_scale.py with one ScaleState; the side
    inputs are gathered as the node does (ros/depth/scale_inputs.py): the scan nearest each
    stamp with time travel through odom, the camera's odometry pose. Scans stop after frame
    `scans_until` (None: never).
    """
    from tt_depth_ros.pipelines.depth_scale import ScaleInputs, ScaleState, scale_depth_frame

    path = FramePath(kind, oracle)
    last_scan = frame_stamp(frames if scans_until is None else scans_until)
    scans = lidar_stamps(last_scan)
    state = ScaleState()
    raw, applied, states, scaled = [], [], [], None
    for i in range(frames):
        rgb, _ = oracle.frame(i)
        t = frame_stamp(i)
        frame = path(i)
        if settings.source == 'cloud':
            c = nearest_scan(t, [s for s in scans if s <= last_scan], tolerance_s)
            inputs = (ScaleInputs(stamp_ns=t, cloud_missing='no scan') if c is None else
                      ScaleInputs(stamp_ns=t, cloud=oracle.scan(c, outliers),
                                  cloud_to_camera=T_optical_lidar(t, c)))
        else:
            inputs = ScaleInputs(stamp_ns=t, camera_pose=camera_pose(t))
        scaled = scale_depth_frame(path.path.kind, frame, settings, min_confidence, 0.0,
                                   inputs, state)
        f = scaled.filtered
        raw.append(oracle.network_scale(i))
        applied.append(f.value if f.value is not None else np.nan)
        states.append(f.state)
    return SequenceResult(np.array(raw), np.array(applied), states, scaled)
