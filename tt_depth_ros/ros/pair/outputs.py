"""The pair node's publishing: pose / path / TF rules, the measured extrinsic, depth outputs.

`PairPublishers` is owned by the node (ros/pair/node.py) and used by each mode's per-pair work
(ros/pair/stereo.py, ros/pair/temporal.py). Rules (docs/nodes.md "Frames and units"): `/tf` only for
metric poses unless publish_tf='always' (then unscaled poses go to `<child>_unscaled`); a frame
name tf2 would reject is a counted rejection of the pose only; depth is published as metres only
with a metric scale, else on `depth_unscaled` when asked; `output_resolution='camera'` maps grid
outputs back to the camera image. Pixels a rectification took from outside the source image leave
the masks first (`drop_borders`).
"""
from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Path
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from tt_depth_ros.geometry.depth.grid_to_camera import grid_to_camera
from tt_depth_ros.geometry.pointmap.scale import ScaleResult
from tt_depth_ros.geometry.pose.se3 import angle_deg
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import unmap_intrinsics
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.cloud import pointcloud2_msg
from tt_depth_ros.ros.msgs.depth import depth_image_msg
from tt_depth_ros.ros.msgs.pose import frame_id_problem, path_msg, pose_stamped_msg, tf_message
from tt_depth_ros.ros.pair.figures import PairFigures
from tt_depth_ros.ros.pair.host import PairHost


def drop_borders(result, borders):
    """`result` with rectification borders out of its masks (so of depth, cloud and scale).

    Args:
        result: a Dust3rPair (or an AnyviewPair): `mask1`/`mask2` on the network grids of
            `plan1`/`plan2`.
        borders: (border of view 1, border of view 2), each None or the Rectifier whose mask
            marks the rectified pixels from outside the source image (CameraView.border).
    """
    for i, (border, plan) in enumerate(zip(borders, (result.plan1, result.plan2)), 1):
        if border is not None:
            valid = border.valid_window(plan.resized_wh, plan.box_ltrb)
            setattr(result, f'mask{i}', getattr(result, f'mask{i}') & valid)
    return result


def _stamp_msg(stamp_ns: int) -> Time:
    return Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)


class PairPublishers:
    """The pair node's lifecycle publishers and the rules of what goes on them.

    Args:
        node: the node at configure (ros/pair/host.py `PairHost`).
        figures: where TF and frame-name outcomes are counted.
    """

    def __init__(self, node: PairHost, figures: PairFigures) -> None:
        self._node, self._figures = node, figures
        pub = node.add_publisher
        self._out = {
            'points': pub(PointCloud2, 'points'), 'depth': pub(Image, 'depth'),
            'depth_info': pub(CameraInfo, 'depth/camera_info'),
            'depth_unscaled': pub(Image, 'depth_unscaled'),
            'depth_unscaled_info': pub(CameraInfo, 'depth_unscaled/camera_info'),
            'depth2': pub(Image, 'depth2'), 'depth2_info': pub(CameraInfo, 'depth2/camera_info'),
            'confidence': pub(Image, 'confidence'), 'pose': pub(PoseStamped, 'pose'),
            'path': pub(Path, 'path'),
            'tf': node.add_tf_publisher(static=False),
            'tf_static': node.add_tf_publisher(static=True),
        }
        self._last_extrinsic: np.ndarray | None = None

    def restart(self) -> None:
        """Activate: the next measured extrinsic is published whatever it is."""
        self._last_extrinsic = None

    def wants_points(self) -> bool:
        """Whether the cloud has a subscriber (it is not built otherwise)."""
        return self._out['points'].get_subscription_count() > 0

    def publish_points(self, xyz: np.ndarray, rgb: np.ndarray, header) -> None:
        """The fused cloud: (N, 3) points and their (N, 3) colours as one row."""
        self._out['points'].publish(pointcloud2_msg(xyz[None], rgb[None], header))

    def publish_pose(self, T, stamp, parent, child, metric: bool, history=None) -> bool:
        """Publish pose (+ path of `history`) and, per publish_tf, /tf: metres only unless 'always'.

        With 'always' the child of an unscaled pose is `<child>_unscaled`, so no metric frame
        ever gets DUSt3R units. A frame name tf2 would reject is a counted, logged rejection of
        this pose only. `history` is the trajectory's (stamp_ns, T) list (temporal mode; None =
        no path). Returns whether the pose was published.
        """
        p = self._node.params
        tf_mode = p.publish_tf
        if tf_mode == 'always' and not metric:
            child = f'{child}_unscaled'
        problem = frame_id_problem(parent) or (
            tf_mode != 'never' and (frame_id_problem(child) or (
                'parent and child frame are both ' + repr(child) if parent == child else None)))
        if problem:
            self._figures.record('pose_rejected_frame_id', last_frame_id_problem=problem)
            self._node.warn_throttled(
                'pose_frame_id',
                f'pose/TF not published: {problem} (parent {parent!r}, child {child!r}); set '
                'the camera frame_id or tf_parent_frame/tf_child_frame. Cloud and depth are '
                'still published')
            return False
        self._out['pose'].publish(pose_stamped_msg(T, stamp, parent))
        if tf_mode == 'always' or (tf_mode == 'auto' and metric):
            self._out['tf'].publish(tf_message(T, stamp, parent, child))
            self._figures.record('tf_published')
        elif tf_mode == 'auto':
            self._figures.record('tf_withheld_unscaled')
        if history is not None and p.publish_path:
            poses = [(_stamp_msg(s), T_) for s, T_ in list(history)[-p.path_max_poses:]]
            self._out['path'].publish(path_msg(poses, parent))
        return True

    def publish_extrinsic(self, T, stamp, parent, child) -> None:
        """The measured camera-2 pose on /tf_static when it moved (1 mm / 0.05 deg)."""
        last = self._last_extrinsic
        if last is not None and np.linalg.norm(T[:3, 3] - last[:3, 3]) <= 1e-3 and \
                angle_deg(last[:3, :3].T @ T[:3, :3]) <= 0.05:
            return
        self._last_extrinsic = T.copy()
        self._out['tf_static'].publish(tf_message(T, stamp, parent, child))

    def _on_camera_grid(self, grid, K_net, plan):
        """(map, K) at camera resolution when output_resolution='camera', else unchanged."""
        if self._node.params.output_resolution != 'camera':
            return grid, K_net
        return grid_to_camera(grid, plan), (None if K_net is None else
                                            unmap_intrinsics(K_net, plan))

    def publish_confidence(self, conf, plan, header) -> None:
        """The confidence map (32FC1, >= 1) when publish_confidence is set."""
        if not self._node.params.publish_confidence:
            return
        conf, _ = self._on_camera_grid(conf, None, plan)
        self._out['confidence'].publish(depth_image_msg(conf, header))

    def publish_depth(self, name, depth, K, header, scale: ScaleResult, plan,
                      unscaled_topic='depth_unscaled') -> None:
        """Depth on `name` in metres with a metric scale, else on `unscaled_topic` when asked."""
        publish_unscaled = bool(unscaled_topic) and self._node.params.publish_unscaled_depth
        if not (scale.metric or publish_unscaled):
            return
        depth, K = self._on_camera_grid(depth, K, plan)
        h, w = depth.shape
        topic = name if scale.metric else unscaled_topic
        self._out[topic].publish(depth_image_msg(depth, header))
        self._out[f'{topic}_info'].publish(camera_info_for(K, w, h, header))
