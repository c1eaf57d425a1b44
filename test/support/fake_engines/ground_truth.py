"""Test double for the network ONLY: returns the bag's ground-truth depth for the frame it is shown.

Loaded by the real depth node through
`engine_plugin: 'support.fake_engines.ground_truth:GroundTruthEngine'` (test path, never automatic).
The node runs at a fixed network size equal to the camera size, so the image the engine receives is
the bag image byte for byte; it is looked up by hash and the ground truth is returned as DA3 *raw*
depth (metres * 300 / focal), times `scale`. Everything else - decoding, intrinsics, metric scaling,
sky, messages, the benchmark's matching and metrics - is real code, so scale=1 must give AbsRel 0
and scale=1.1 AbsRel 0.1.
"""
from __future__ import annotations

import hashlib
import time

import numpy as np
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from tt_depth_ros.engines.base import Engine, EngineInfo, check_views


class GroundTruthEngine(Engine):
    def __init__(self, bag: str, focal: float, scale: float = 1.0,
                 image_topic: str = '/camera/image_raw', gt_topic: str = '/camera/depth_gt'):
        ts = get_typestore(Stores.ROS2_JAZZY)
        by_stamp: dict = {}
        with Reader(bag) as r:
            for conn, _, raw in r.messages():
                if conn.topic not in (image_topic, gt_topic):
                    continue
                m = ts.deserialize_cdr(raw, conn.msgtype)
                key = (m.header.stamp.sec, m.header.stamp.nanosec)
                dt = np.float32 if m.encoding == '32FC1' else np.uint8
                a = np.frombuffer(m.data.tobytes(), dt).reshape(m.height, m.width, -1)
                by_stamp.setdefault(key, {})[conn.topic] = a
        self._gt = {}
        for v in by_stamp.values():
            rgb, depth = v[image_topic], v[gt_topic][..., 0]
            self._gt[hashlib.sha1(np.ascontiguousarray(rgb).tobytes()).hexdigest()] = depth
        self.raw_per_m = 300.0 / float(focal) * float(scale)
        self._timings = {}

    def prepare(self, shape):
        pass

    def infer(self, *images):
        check_views(images, 1)
        t0 = time.perf_counter()
        key = hashlib.sha1(np.ascontiguousarray(images[0]).tobytes()).hexdigest()
        if key not in self._gt:
            raise ValueError('image not in the bag (network size must equal the camera size)')
        depth = self._gt[key]
        sky = np.isposinf(depth).astype(np.float32)
        raw = np.where(np.isfinite(depth), depth, 1.0).astype(np.float32) * self.raw_per_m
        self._timings = {'forward': time.perf_counter() - t0}
        return {'depth': raw.astype(np.float32), 'sky': sky}

    def close(self):
        pass

    @property
    def info(self):
        return EngineInfo(backend='test-double', device='cpu', dtype='float32',
                          model='ground-truth')
