"""Smoke publisher process: N 640x480 rgb8 Images whose content encodes their index.

Usage: python -m support.ros_nodes.image_pub <topic> <best_effort|reliable> <count> <env_json_out>
    <ready_path>
Writes its ROS environment to env_json_out, waits until the subscriber has matched it (image_sub
creates ready_path), publishes at 20 Hz.
"""
import json
import os
import sys
import time

from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env

apply_loopback_env()
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from tt_depth_ros.ros.msgs.depth import rgb_image_msg  # noqa: E402

ENV_KEYS = ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE',
            'FASTRTPS_DEFAULT_PROFILES_FILE', 'ROS_DOMAIN_ID', 'RMW_IMPLEMENTATION',
            'ROS_LOCALHOST_ONLY')


def frame(i: int) -> np.ndarray:
    """Deterministic 480x640 RGB content for frame i (checked by the subscriber)."""
    rng = np.random.default_rng(i)
    return rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)


def main() -> None:
    topic, rel, count, env_out, ready = (sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4],
                                         sys.argv[5])
    with open(env_out, 'w') as f:
        json.dump({k: os.environ.get(k) for k in ENV_KEYS}, f)
    rclpy.init()
    node = rclpy.create_node('smoke_pub')
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE if rel == 'reliable'
                     else ReliabilityPolicy.BEST_EFFORT)
    pub = node.create_publisher(Image, topic, qos)
    # Discovery is not symmetric: this side may match the subscriber before the subscriber has
    # matched this writer, and best-effort samples sent in between are lost. Wait for both sides.
    deadline = time.monotonic() + 30
    while not (pub.get_subscription_count() > 0 and os.path.exists(ready)) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    for i in range(count):
        h = Header(frame_id=f'frame_{i}')
        h.stamp.sec = i
        pub.publish(rgb_image_msg(frame(i), h))
        time.sleep(0.05)
    time.sleep(1.0)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
