"""Checker process: verifies the depth node's outputs against the Python API on the same frame.

Usage: python -m support.ros_nodes.depth_checker <namespace> <png> <weights> <K_image_json>
    <frames> <result_json>
Collects `frames` stamps that have depth, depth/camera_info and points; checks encodings, sizes,
headers, CameraInfo, the organized cloud layout and that depth equals
`DepthPredictor.from_pretrained('da3metric-tiny', weights, backend='torch-cpu')(rgb, K)`; writes a
JSON report {'ok', 'errors', 'frames'}.
"""
import json
import os
import sys
import time

from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env

apply_loopback_env()
import cv2  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from pointcloud2 import read_points  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402

from tt_depth_ros.api import DepthPredictor  # noqa: E402
from tt_depth_ros.geometry.depth.depth_cloud import organized_points  # noqa: E402
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth  # noqa: E402

FRAME_ID = 'sim_camera_optical_frame'


def check(outs, rgb, K, expected, errors):
    depth_msg, info, cloud = outs['depth'], outs['depth/camera_info'], outs['points']
    h, w = rgb.shape[:2]
    for name, m in outs.items():
        if m.header.frame_id != FRAME_ID:
            errors.append(f'{name}: frame_id {m.header.frame_id!r}')
    if depth_msg.encoding != '32FC1' or (depth_msg.height, depth_msg.width) != (h, w) \
            or depth_msg.step != 4 * w:
        errors.append(f'depth: {depth_msg.encoding} {depth_msg.width}x{depth_msg.height} '
                      f'step {depth_msg.step}')
    if (info.width, info.height) != (depth_msg.width, depth_msg.height):
        errors.append(f'camera_info size {info.width}x{info.height} != depth size')
    if not np.allclose(np.reshape(info.k, (3, 3)), K, rtol=1e-12):
        errors.append(f'camera_info K {list(info.k)} != scaled K {K.ravel().tolist()}')
    depth = image_msg_to_depth(depth_msg)
    same_codes = np.array_equal(np.isnan(depth), np.isnan(expected)) and \
        np.array_equal(np.isposinf(depth), np.isposinf(expected))
    fin = np.isfinite(expected)
    if not same_codes or not np.allclose(depth[fin], expected[fin], rtol=1e-5, atol=1e-6):
        diff = np.nanmax(np.abs(np.where(fin, depth - expected, 0)))
        errors.append(f'depth differs from DepthPredictor (codes equal: {same_codes}, '
                      f'max abs diff {diff})')
    if (cloud.height, cloud.width, cloud.point_step, cloud.row_step, cloud.is_dense) != \
            (h, w, 16, 16 * w, False):
        errors.append(f'cloud layout {cloud.height}x{cloud.width} step {cloud.point_step}')
    if [(f.name, f.offset) for f in cloud.fields] != [('x', 0), ('y', 4), ('z', 8)]:
        errors.append(f'cloud fields {[(f.name, f.offset) for f in cloud.fields]}')
    pts = read_points(cloud, field_names=['x', 'y', 'z'], skip_nans=False)
    xyz = np.stack([pts['x'], pts['y'], pts['z']], -1).reshape(h, w, 3)
    if not np.allclose(xyz, organized_points(expected, K), rtol=1e-5, atol=1e-5, equal_nan=True):
        errors.append('cloud points differ from the back-projected API depth')


def main() -> None:
    ns, png, weights = sys.argv[1], sys.argv[2], sys.argv[3]
    K = np.array(json.loads(sys.argv[4]), dtype=np.float64).reshape(3, 3)
    frames, out_path = int(sys.argv[5]), sys.argv[6]
    rgb = cv2.cvtColor(cv2.imread(png, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    with DepthPredictor.from_pretrained('da3metric-tiny', dtype='float32', weights=weights,
                                        backend='torch-cpu') as predictor:
        expected = predictor(rgb, K=K).depth
    rclpy.init()
    node = rclpy.create_node('depth_checker', namespace=ns)
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
    got: dict[int, dict] = {}

    def sub(msg_type, topic):
        def cb(msg):
            got.setdefault(msg.header.stamp.sec, {})[topic] = msg
        node.create_subscription(msg_type, topic, cb, qos)
    sub(Image, 'depth')
    sub(CameraInfo, 'depth/camera_info')
    sub(PointCloud2, 'points')
    errors, done = [], []
    deadline = time.monotonic() + 120
    while len(done) < frames and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
        for stamp, outs in list(got.items()):
            if len(outs) == 3 and stamp not in done:
                check(outs, rgb, K, expected, errors)
                done.append(stamp)
    if len(done) < frames:
        errors.append(f'only {len(done)} complete frames within the deadline')
    with open(out_path + '.tmp', 'w') as f:
        json.dump({'ok': not errors, 'errors': errors, 'frames': done}, f)
    os.replace(out_path + '.tmp', out_path)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
