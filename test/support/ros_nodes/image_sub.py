"""Smoke subscriber process: receives Images, checks each against image_pub.frame(i).

Usage: python -m support.ros_nodes.image_sub <topic> <best_effort|reliable> <expected_count>
    <result_json_out>
Creates <result_json_out>.ready once it has matched the publisher; writes {'received', 'intact',
'bad', 'env'} when it has `expected_count` frames or after 30 s.
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

from support.ros_nodes.image_pub import ENV_KEYS, frame  # noqa: E402


def main() -> None:
    topic, rel, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rclpy.init()
    node = rclpy.create_node('smoke_sub')
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE if rel == 'reliable'
                     else ReliabilityPolicy.BEST_EFFORT)
    res = {'received': 0, 'intact': 0, 'bad': [],
           'env': {k: os.environ.get(k) for k in ENV_KEYS}}

    def cb(msg: Image) -> None:
        res['received'] += 1
        i = msg.header.stamp.sec
        data = np.frombuffer(msg.data, np.uint8)
        ok = (msg.encoding == 'rgb8' and (msg.height, msg.width, msg.step) == (480, 640, 1920)
              and msg.header.frame_id == f'frame_{i}'
              and np.array_equal(data.reshape(480, 640, 3), frame(i)))
        if ok:
            res['intact'] += 1
        else:
            res['bad'].append(i)

    sub = node.create_subscription(Image, topic, cb, qos)
    ready = False
    deadline = time.monotonic() + 30
    while res['received'] < count and time.monotonic() < deadline:
        if not ready and sub.get_publisher_count() > 0:
            open(out + '.ready', 'w').close()
            ready = True
        rclpy.spin_once(node, timeout_sec=0.05)
    with open(out + '.tmp', 'w') as f:
        json.dump(res, f)
    os.replace(out + '.tmp', out)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
