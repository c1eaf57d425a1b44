"""Test-side helpers for the pair node: start it, feed it synthetic camera frames, read outputs.

The node under test always runs in its own process (support.procs.spawn); the test process hosts a
RosProbe that publishes Image + CameraInfo and collects the node's outputs.
"""
from __future__ import annotations

import time

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from support.fake_engines.pair_scene import render_view
from support.procs import ros_node_cmd, wait_for
from support.rosutil import RELIABLE, RosProbe
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.ros.runtime.diagnostics import status_values

SCENE_ENGINE = 'support.fake_engines.pair_scene:SceneDust3rEngine'
TINY_ENGINE = 'support.fake_engines.pair_scene:tiny_dust3r_engine'
W, H = 112, 80      # network_size 112 maps these 1:1 (no resize, no crop)


def pair_node_cmd(ns: str, params: dict, name: str = 'pair_node') -> list[str]:
    return ros_node_cmd('tt_depth_ros.ros.pair', ns, params, name)


def stamp(t_ns: int) -> Time:
    return Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)


def t_ns(stamp_msg) -> int:
    return stamp_msg.sec * 1_000_000_000 + stamp_msg.nanosec


class PairProbe(RosProbe):
    """Probe with the pair node's inputs and outputs under namespace `ns`."""

    def __init__(self, ns: str, mode: str):
        super().__init__(f'probe_{ns.strip("/")}')
        self.ns, self.mode = ns, mode
        cams = ('camera1', 'camera2') if mode == 'stereo' else ('',)
        self.img_pubs, self.info_pubs = [], []
        for c in cams:
            pre = f'{ns}/{c}/' if c else f'{ns}/'
            self.img_pubs.append(self.publisher(Image, pre + 'image', RELIABLE))
            self.info_pubs.append(self.publisher(CameraInfo, pre + 'camera_info', RELIABLE))
        self.metric_pub = self.publisher(Image, f'{ns}/metric_depth', RELIABLE)
        for typ, topic in ((PoseStamped, 'pose'), (PointCloud2, 'points'), (Image, 'depth'),
                           (CameraInfo, 'depth/camera_info'), (Image, 'depth_unscaled'),
                           (Image, 'depth2'), (Image, 'confidence'), (Path, 'path')):
            self.subscribe(typ, f'{ns}/{topic}')
        self.subscribe(TFMessage, '/tf')
        self.subscribe(DiagnosticArray, '/diagnostics')

    def out(self, topic: str) -> list:
        return self.got(topic if topic.startswith('/') else f'{self.ns}/{topic}')

    def wait_ready(self, node: str = 'pair_node', timeout: float = 60.0) -> None:
        full = f'{self.ns}/{node}'
        wait_for(lambda: self._state(full) == 'active', timeout, what=f'{full} active')
        for p in self.img_pubs + self.info_pubs:
            self.wait_matched(p, 1, timeout)
        self.wait_sources([f'{self.ns}/{t}' for t in ('pose', 'points', 'depth/camera_info')],
                          timeout)

    def _state(self, full):
        try:
            return self.get_state(full, timeout=2.0)
        except TimeoutError:
            return None

    def publish_view(self, cam: int, rgb, K, t: int, frame_id: str, info: bool = True,
                     encoding_msg=None) -> None:
        header = Header(stamp=stamp(t), frame_id=frame_id)
        if info:
            self.info_pubs[cam].publish(camera_info_for(K, rgb.shape[1], rgb.shape[0], header))
            time.sleep(0.01)
        self.img_pubs[cam].publish(encoding_msg or rgb_image_msg(rgb, header))

    def publish_stereo(self, frame_id: int, t: int, skew_ns: int = 0, frames=('left', 'right')):
        r1, _, K = render_view('stereo', frame_id, 0, W, H)
        r2, _, _ = render_view('stereo', frame_id, 1, W, H)
        self.publish_view(0, r1, K, t, frames[0])
        self.publish_view(1, r2, K, t + skew_ns, frames[1])

    def publish_temporal(self, frame_id: int, t: int, frame='cam'):
        rgb, _, K = render_view('temporal', frame_id, 0, W, H)
        self.publish_view(0, rgb, K, t, frame)

    def wait_stamp(self, topic: str, t: int, timeout: float = 20.0):
        """The message on `topic` with header stamp t (TF: a transform with that stamp)."""
        def find():
            for m in self.out(topic):
                if topic == '/tf':
                    for tr in m.transforms:
                        if t_ns(tr.header.stamp) == t:
                            return tr
                elif t_ns(m.header.stamp) == t:
                    return m
            return None
        return wait_for(find, timeout, what=f'{topic} with stamp {t}')

    def diag(self, node: str = 'pair_node') -> dict | None:
        """Latest /diagnostics values of the node (None before the first)."""
        for arr in reversed(self.out('/diagnostics')):
            for st in arr.status:
                if st.name.endswith(f'{self.ns}/{node}'):
                    values = status_values(st)
                    values['_level'] = st.level
                    values['_message'] = st.message
                    return values
        return None

    def wait_diag(self, pred, timeout: float = 20.0, node: str = 'pair_node') -> dict:
        def ok():
            d = self.diag(node)
            return d if d is not None and pred(d) else None
        return wait_for(ok, timeout, what='diagnostics condition')


def angle_between_deg(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    c = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))
