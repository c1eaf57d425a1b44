"""The pair node's publishing: pose / path / TF rules, the measured extrinsic, depth outputs.

A mixin of PairNode (ros/pair/node.py), kept apart so the node file stays about the pipeline.
Rules (README "Frames and units"): `/tf` only for metric poses unless publish_tf='always' (then
unscaled poses go to `<child>_unscaled`); a frame name tf2 would reject is a counted rejection of
the pose only; depth is published as metres only with a metric scale, else on `depth_unscaled`
when asked; `output_resolution='camera'` maps grid outputs back to the camera image. Pixels a
rectification took from outside the source image leave the masks first (`drop_borders`).
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.geometry.dust3r_preprocess import unmap_intrinsics
from tt_depth_ros.geometry.grid_to_camera import grid_to_camera
from tt_depth_ros.geometry.scale import ScaleResult
from tt_depth_ros.geometry.se3 import angle_deg
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import depth_image_msg
from tt_depth_ros.ros.msgs.pose import frame_id_problem, path_msg, pose_stamped_msg, tf_message


def drop_borders(result, borders):
    """`result` with rectification borders out of its masks (so of depth, cloud and scale).

    Args:
        result: a PairResult (or the any-view one): `mask1`/`mask2` on the network grids of
            `plan1`/`plan2`.
        borders: (border of view 1, border of view 2), each None or the Rectifier whose mask
            marks the rectified pixels from outside the source image
            (ros/runtime/lifecycle_node.camera_view).
    """
    for i, (border, plan) in enumerate(zip(borders, (result.plan1, result.plan2)), 1):
        if border is not None:
            valid = border.valid_window(plan.resized_wh, plan.box_ltrb)
            setattr(result, f'mask{i}', getattr(result, f'mask{i}') & valid)
    return result


class PairPublishing:
    """Publishing methods of PairNode (uses its `p`, `_out`, `_info`, `chain`, `robot`)."""

    def _publish_pose(self, T, stamp, parent, child, metric: bool, trajectory=False) -> bool:
        """Publish pose (+ path) and, per publish_tf, /tf: metres only unless 'always'.

        With 'always' the child of an unscaled pose is `<child>_unscaled`, so no metric frame
        ever gets DUSt3R units. A frame name tf2 would reject is a counted, logged rejection of
        this pose only. Returns whether the pose was published.
        """
        tf_mode = self.p['publish_tf']
        if tf_mode == 'always' and not metric:
            child = f'{child}_unscaled'
        problem = frame_id_problem(parent) or (
            tf_mode != 'never' and (frame_id_problem(child) or (
                'parent and child frame are both ' + repr(child) if parent == child else None)))
        if problem:
            with self._info_lock:
                self._info['pose_rejected_frame_id'] += 1
                self._info['last_frame_id_problem'] = problem
            self.get_logger().warning(
                f'pose/TF not published: {problem} (parent {parent!r}, child {child!r}); set '
                'the camera frame_id or tf_parent_frame/tf_child_frame. Cloud and depth are '
                'still published', throttle_duration_sec=self.p['bad_input_log_period'])
            return False
        self._out['pose'].publish(pose_stamped_msg(T, stamp, parent))
        if tf_mode == 'always' or (tf_mode == 'auto' and metric):
            self._out['tf'].publish(tf_message(T, stamp, parent, child))
            with self._info_lock:
                self._info['tf_published'] += 1
        elif tf_mode == 'auto':
            with self._info_lock:
                self._info['tf_withheld_unscaled'] += 1
        if trajectory and self.p['publish_path']:
            history = list(self.robot.history if self.robot is not None else self.chain.history)
            poses = [(self._stamp_msg(s), T_) for s, T_ in history[-self.p['path_max_poses']:]]
            self._out['path'].publish(path_msg(poses, parent))
        return True

    def _publish_extrinsic(self, T, stamp, parent, child) -> None:
        """The measured camera-2 pose on /tf_static when it moved (1 mm / 0.05 deg)."""
        last = self._last_extrinsic
        if last is not None and np.linalg.norm(T[:3, 3] - last[:3, 3]) <= 1e-3 and \
                angle_deg(last[:3, :3].T @ T[:3, :3]) <= 0.05:
            return
        self._last_extrinsic = T.copy()
        self._out['tf_static'].publish(tf_message(T, stamp, parent, child))

    @staticmethod
    def _stamp_msg(stamp_ns: int):
        from builtin_interfaces.msg import Time
        return Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)

    def _on_camera_grid(self, grid, K_net, plan):
        """(map, K) at camera resolution when output_resolution='camera', else unchanged."""
        if self.p['output_resolution'] != 'camera':
            return grid, K_net
        return grid_to_camera(grid, plan), (None if K_net is None else
                                            unmap_intrinsics(K_net, plan))

    def _publish_confidence(self, conf, plan, header) -> None:
        conf, _ = self._on_camera_grid(conf, None, plan)
        self._out['confidence'].publish(depth_image_msg(conf, header))

    def _publish_depth(self, name, depth, K, header, scale: ScaleResult, plan,
                       unscaled_topic='depth_unscaled') -> None:
        if not (scale.metric or (unscaled_topic and self.p['publish_unscaled_depth'])):
            return
        depth, K = self._on_camera_grid(depth, K, plan)
        h, w = depth.shape
        if scale.metric:
            self._out[name].publish(depth_image_msg(depth, header))
            self._out[f'{name}_info'].publish(camera_info_for(K, w, h, header))
        elif unscaled_topic and self.p['publish_unscaled_depth']:
            self._out[unscaled_topic].publish(depth_image_msg(depth, header))
            self._out[f'{unscaled_topic}_info'].publish(camera_info_for(K, w, h, header))
