"""Stereo mode of the pair node: two cameras paired by stamp, camera 1 the reference.

Inputs camera1/{image,camera_info} and camera2/{image,camera_info}; frames are paired by stamp
(ros/pair/pairing.py) on the executor, and the pair goes to the mailbox (latest wins). Per pair:
both views, the pipeline, PnP of camera 2, the scale (baseline or metric depth), then cloud,
depth (+ depth2), confidence and last the pose: a failed or weak PnP publishes no pose and no TF
for that pair, but its cloud and depth still go out (counted in `pnp_failures`, not skipped).
"""
from __future__ import annotations

import time
from collections import deque
from typing import Callable

from tt_depth_ros.ros.msgs.stamps import stamp_to_ns
from tt_depth_ros.ros.pair.mode import PairMode, Published
from tt_depth_ros.ros.pair.outputs import PairPublishers
from tt_depth_ros.ros.pair.pairing import ApproxTimePairer, Pair
from tt_depth_ros.ros.pair.steps import PairSteps

PAIR_TIMES = 256   # pairs over which pairing_rate_hz is measured


class StereoMode(PairMode):
    """Pairing, inputs and per-pair work of a stereo rig (arguments: PairMode)."""

    def __init__(self, node, steps: PairSteps, outputs: PairPublishers,
                 metric_for: Callable) -> None:
        super().__init__(node, steps, outputs, metric_for)
        node = self._node
        self.pairer = ApproxTimePairer(node.params.pair_tolerance_s,
                                       node.params.pair_queue_size)
        self._pair_times: deque = deque(maxlen=PAIR_TIMES)

    def create_inputs(self) -> None:
        """Both cameras' image and camera_info (activate)."""
        node = self._node
        self.pairer.reset()
        node.subscribe_camera_info('camera1/camera_info', 'camera1')
        node.subscribe_camera_info('camera2/camera_info', 'camera2')
        node.subscribe_image('camera1/image', lambda m: self._on_image(0, m))
        node.subscribe_image('camera2/image', lambda m: self._on_image(1, m))

    def _on_image(self, side: int, msg) -> None:
        node = self._node
        node.stats.on_input()
        if not node.precheck_image(msg, f'camera{side + 1}'):
            return
        pair = self.pairer.push(side, stamp_to_ns(msg.header.stamp), msg)
        if pair is not None:
            self._pair_times.append(time.monotonic())
            node.offer(pair)

    def process(self, pair: Pair) -> Published | None:
        """Worker: one pair to cloud, depth, confidence and pose (None: skipped, reported)."""
        steps, out, p = self._steps, self._out, self._node.params
        m1, m2 = pair.first, pair.second
        v1 = steps.view(m1, 'camera1')   # one reject (reason) per skipped pair
        v2 = None if v1 is None else steps.view(m2, 'camera2')
        if v2 is None:
            return None
        result = steps.run(v1, v2)
        if result is None:
            return None
        pose_ok = steps.pose_ok(result, skips_frame=False)
        scale = steps.pipeline.stereo_scale(result, self._metric_for(pair.stamp_ns_1))
        if not steps.scale_ok(scale):
            return None
        s = scale.value
        if out.wants_points():
            xyz, rgb = result.fused_points(s)
            out.publish_points(xyz, rgb, m1.header)
        K1 = result.K1_net if result.K1_net is not None else result.K2_net
        out.publish_depth('depth', result.depth1(s), K1, m1.header, scale, result.plan1)
        if pose_ok and p.publish_depth2:
            out.publish_depth('depth2', result.depth2(s), result.K2_net, m2.header, scale,
                              result.plan2, unscaled_topic=None)
        out.publish_confidence(result.conf1, result.plan1, m1.header)
        if pose_ok:   # last: a pose that cannot be published never blocks cloud and depth
            T = result.T_units.copy()
            T[:3, 3] *= s
            parent = p.tf_parent_frame or m1.header.frame_id
            child = p.tf_child_frame or f'{m2.header.frame_id or "camera2"}_dust3r'
            if out.publish_pose(T, m1.header.stamp, parent, child, scale.metric) and \
                    scale.metric and p.publish_extrinsic_static:
                out.publish_extrinsic(T, m1.header.stamp, parent, child)
        return Published(m1.header, dict(result.timings))

    def diagnostics(self) -> dict:
        """Pairing figures per camera (see the accounting in ros/pair/node.py)."""
        st = self.pairer.stats
        times = list(self._pair_times)
        rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and \
            times[-1] > times[0] else 0.0
        return dict(pairs=st.pairs, pairing_rate_hz=f'{rate:.2f}',
                    received_camera1=st.received[0], received_camera2=st.received[1],
                    unpaired_camera1=st.unpaired[0], unpaired_camera2=st.unpaired[1],
                    queued_camera1=st.queued[0], queued_camera2=st.queued[1],
                    input_history_depth=self._node.input_history_depth(),
                    pairing_resets=sum(st.resets),
                    pair_duplicates=sum(st.duplicates), last_pair_skew_s=st.last_skew_s)
