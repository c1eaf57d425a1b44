"""Deterministic synthetic rosbag2 with ground truth: the demo's and the benchmark's input.

Renders tools/eval/scene_render.py's procedural corridor along a known trajectory and writes, per
frame, with the `rosbags` library (no ROS install needed):

- `/camera/image_raw` (sensor_msgs/Image rgb8), `/camera/image_raw/compressed` (JPEG),
  `/camera/camera_info` — the left/mono camera, frame `camera_optical_frame`;
- `/camera/depth_gt` (32FC1 metres of planar z, +Inf = sky, REP 118);
- `/camera/pose_gt` (geometry_msgs/PoseStamped: the optical frame's pose in `odom`);
- `/camera_right/image_raw`, `/camera_right/camera_info` — a rectified stereo partner `baseline_m`
  to the right (P[3] = -fx * baseline, the ROS stereo convention), `camera_right_optical_frame`.

Same arguments give byte-identical bags. Usage: `python -m tt_depth_ros.tools.bag.sample OUT_DIR`.
"""
from __future__ import annotations

import argparse
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np

from tt_depth_ros.tools.eval import scene_render

IMAGE, CAMERA_INFO = '/camera/image_raw', '/camera/camera_info'
DEPTH_GT, POSE_GT = '/camera/depth_gt', '/camera/pose_gt'
RIGHT_IMAGE, RIGHT_CAMERA_INFO = '/camera_right/image_raw', '/camera_right/camera_info'
TOPICS = {
    'image': IMAGE,
    'compressed': IMAGE + '/compressed',
    'camera_info': CAMERA_INFO,
    'depth_gt': DEPTH_GT,
    'pose_gt': POSE_GT,
    'right_image': RIGHT_IMAGE,
    'right_camera_info': RIGHT_CAMERA_INFO,
}
FRAME_LEFT = 'camera_optical_frame'
FRAME_RIGHT = 'camera_right_optical_frame'
FRAME_WORLD = 'odom'
DISTROS = ('jazzy', 'kilted', 'humble')


@dataclass(frozen=True)
class SampleBagConfig:
    """What to render. Defaults give ~6 MB: 256x192, 12 frames at 10 Hz (tools loop it)."""

    width: int = 256
    height: int = 192
    frames: int = 12
    rate_hz: float = 10.0
    hfov_deg: float = 70.0
    baseline_m: float = 0.12
    step_m: float = 0.1
    jpeg_quality: int = 90
    start_ns: int = 1_700_000_000_000_000_000
    distro: str = 'jazzy'
    storage: str = 'mcap'

    def validate(self) -> None:
        """Raise ValueError naming the first bad field."""
        if self.width < 16 or self.height < 16:
            raise ValueError(f'image size must be at least 16x16, got {self.width}x{self.height}')
        if self.frames < 1:
            raise ValueError(f'frames must be >= 1, got {self.frames}')
        if not self.rate_hz > 0:
            raise ValueError(f'rate_hz must be > 0, got {self.rate_hz}')
        if self.distro not in DISTROS:
            raise ValueError(f'distro must be one of {DISTROS}, got {self.distro!r}')
        if self.storage not in ('mcap', 'sqlite3'):
            raise ValueError(f"storage must be 'mcap' or 'sqlite3', got {self.storage!r}")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError(f'jpeg_quality must be in 1..100, got {self.jpeg_quality}')


def typestore_for(distro: str):
    """The rosbags typestore of a ROS 2 distro name ('jazzy', 'kilted', 'humble')."""
    from rosbags.typesys import Stores, get_typestore
    stores = {'jazzy': Stores.ROS2_JAZZY, 'kilted': Stores.ROS2_KILTED,
              'humble': Stores.ROS2_HUMBLE}
    if distro not in stores:
        raise ValueError(f'unknown distro {distro!r}; use one of {sorted(stores)}')
    return get_typestore(stores[distro])


def quat_xyzw(R: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w) of a rotation matrix, w >= 0 (Shepperd's method)."""
    m = np.asarray(R, dtype=np.float64)
    tr = np.trace(m)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, (m[k, j] - m[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (m[j, i] + m[i, j]) / s
        q[k] = (m[k, i] + m[i, k]) / s
    q = np.asarray(q) / np.linalg.norm(q)
    if q[3] < 0:
        q = -q
    return tuple(float(v) for v in q)


class _Messages:
    """rosbags message builders for one typestore."""

    def __init__(self, ts):
        self.ts = ts
        self.t = ts.types

    def header(self, stamp_ns: int, frame_id: str):
        stamp = self.t['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9,
                                                       nanosec=stamp_ns % 10**9)
        return self.t['std_msgs/msg/Header'](stamp=stamp, frame_id=frame_id)

    def image(self, hdr, array: np.ndarray, encoding: str):
        a = np.ascontiguousarray(array)
        channels = 1 if a.ndim == 2 else a.shape[2]
        return self.t['sensor_msgs/msg/Image'](
            header=hdr, height=a.shape[0], width=a.shape[1], encoding=encoding, is_bigendian=0,
            step=a.shape[1] * channels * a.dtype.itemsize, data=a.view(np.uint8).reshape(-1))

    def compressed(self, hdr, rgb: np.ndarray, quality: int):
        ok, buf = cv2.imencode('.jpg', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR),
                               [cv2.IMWRITE_JPEG_QUALITY, quality])
        if not ok:
            raise RuntimeError('JPEG encoding failed')
        return self.t['sensor_msgs/msg/CompressedImage'](
            header=hdr, format='rgb8; jpeg compressed bgr8', data=buf.reshape(-1))

    def camera_info(self, hdr, K: np.ndarray, width: int, height: int, tx: float = 0.0):
        P = np.zeros((3, 4))
        P[:, :3] = K
        P[0, 3] = tx
        roi = self.t['sensor_msgs/msg/RegionOfInterest'](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False)
        return self.t['sensor_msgs/msg/CameraInfo'](
            header=hdr, height=height, width=width, distortion_model='plumb_bob',
            d=np.zeros(5), k=K.reshape(-1).astype(np.float64), r=np.eye(3).reshape(-1),
            p=P.reshape(-1), binning_x=0, binning_y=0, roi=roi)

    def pose(self, hdr, T: np.ndarray):
        x, y, z, w = quat_xyzw(T[:3, :3])
        t = self.t
        return t['geometry_msgs/msg/PoseStamped'](header=hdr, pose=t['geometry_msgs/msg/Pose'](
            position=t['geometry_msgs/msg/Point'](x=float(T[0, 3]), y=float(T[1, 3]),
                                                  z=float(T[2, 3])),
            orientation=t['geometry_msgs/msg/Quaternion'](x=x, y=y, z=z, w=w)))


MSGTYPES = {
    'image': 'sensor_msgs/msg/Image', 'compressed': 'sensor_msgs/msg/CompressedImage',
    'camera_info': 'sensor_msgs/msg/CameraInfo', 'depth_gt': 'sensor_msgs/msg/Image',
    'pose_gt': 'geometry_msgs/msg/PoseStamped', 'right_image': 'sensor_msgs/msg/Image',
    'right_camera_info': 'sensor_msgs/msg/CameraInfo',
}


def generate(path: str | Path, config: SampleBagConfig = SampleBagConfig(), *,
             overwrite: bool = False, progress=None) -> dict:
    """Write the sample bag directory at `path`; return a summary (topics, intrinsics, baseline).

    Args:
        path: output rosbag2 directory (must not exist unless `overwrite`).
        config: what to render.
        overwrite: replace an existing rosbag2 directory at `path` (one holding metadata.yaml).
        progress: optional callable(str) for progress lines.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    config.validate()
    path = Path(path)
    if path.exists():
        if not overwrite:
            raise FileExistsError(f'{path} exists; pass overwrite=True (--force) to replace it')
        if not (path / 'metadata.yaml').is_file():
            raise ValueError(f'{path} exists and is not a rosbag2 directory; not removing it')
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = typestore_for(config.distro)
    mk = _Messages(ts)
    K = scene_render.intrinsics(config.width, config.height, config.hfov_deg)
    scene = scene_render.default_scene()
    poses = scene_render.default_trajectory(config.frames, config.step_m)
    T_left_right = np.eye(4)
    T_left_right[0, 3] = config.baseline_m
    period_ns = int(round(1e9 / config.rate_hz))
    storage = StoragePlugin.MCAP if config.storage == 'mcap' else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=storage) as writer:
        conns = {k: writer.add_connection(TOPICS[k], MSGTYPES[k], typestore=ts) for k in TOPICS}

        def put(key, msg, stamp_ns):
            writer.write(conns[key], stamp_ns, ts.serialize_cdr(msg, MSGTYPES[key]))

        for i, T in enumerate(poses):
            stamp = config.start_ns + i * period_ns
            rgb, depth = scene_render.render(scene, K, config.width, config.height, T)
            rgb_r, _ = scene_render.render(scene, K, config.width, config.height, T @ T_left_right)
            hl, hr = mk.header(stamp, FRAME_LEFT), mk.header(stamp, FRAME_RIGHT)
            put('camera_info', mk.camera_info(hl, K, config.width, config.height), stamp)
            put('right_camera_info', mk.camera_info(hr, K, config.width, config.height,
                                                    tx=-K[0, 0] * config.baseline_m), stamp)
            put('depth_gt', mk.image(hl, depth, '32FC1'), stamp)
            put('pose_gt', mk.pose(mk.header(stamp, FRAME_WORLD), T), stamp)
            put('compressed', mk.compressed(hl, rgb, config.jpeg_quality), stamp)
            put('right_image', mk.image(hr, rgb_r, 'rgb8'), stamp)
            put('image', mk.image(hl, rgb, 'rgb8'), stamp)
            if progress and (i + 1) % 10 == 0:
                progress(f'sample bag: {i + 1}/{config.frames} frames')
    return {'path': str(path), 'topics': dict(TOPICS), 'frames': config.frames,
            'K': K.tolist(), 'baseline_m': config.baseline_m, 'config': asdict(config)}


def main(argv: list[str] | None = None) -> int:
    """Console entry point: write the sample bag."""
    d = SampleBagConfig()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('out', help='output rosbag2 directory')
    ap.add_argument('--width', type=int, default=d.width)
    ap.add_argument('--height', type=int, default=d.height)
    ap.add_argument('--frames', type=int, default=d.frames)
    ap.add_argument('--rate', type=float, default=d.rate_hz, help='recorded rate, Hz')
    ap.add_argument('--baseline', type=float, default=d.baseline_m, help='stereo baseline, m')
    ap.add_argument('--distro', choices=DISTROS, default=d.distro, help='typestore (hashes)')
    ap.add_argument('--storage', choices=('mcap', 'sqlite3'), default=d.storage)
    ap.add_argument('--force', action='store_true', help='replace an existing bag directory')
    a = ap.parse_args(argv)
    cfg = SampleBagConfig(width=a.width, height=a.height, frames=a.frames, rate_hz=a.rate,
                          baseline_m=a.baseline, distro=a.distro, storage=a.storage)
    summary = generate(a.out, cfg, overwrite=a.force, progress=print)
    size = sum(f.stat().st_size for f in Path(a.out).rglob('*') if f.is_file())
    print(f"wrote {a.out}: {cfg.frames} frames {cfg.width}x{cfg.height}, {size / 1e6:.1f} MB, "
          f"topics {', '.join(summary['topics'].values())}")
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
