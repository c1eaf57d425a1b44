"""Camera simulator process: publishes one PNG as bgr8 Image + CameraInfo at a fixed rate.

Usage: python -m support.ros_nodes.camera_sim <namespace> <png> <calib_json> <rate_hz>
calib_json: {"width", "height", "k": [9]} — the calibration resolution may differ from the image
(the node must scale it). Stamps: sec = frame index + 1, frame_id 'sim_camera_optical_frame'.
"""
import json
import sys
import time

from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env

apply_loopback_env()
import cv2  # noqa: E402
import rclpy  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from tt_depth_ros.ros.msgs.depth import fill_image_data  # noqa: E402

FRAME_ID = 'sim_camera_optical_frame'


def main() -> None:
    ns, png, calib, rate = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
    bgr = cv2.imread(png, cv2.IMREAD_COLOR)
    rclpy.init()
    node = rclpy.create_node('camera_sim', namespace=ns)
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
    img_pub = node.create_publisher(Image, 'image', qos)
    info_pub = node.create_publisher(CameraInfo, 'camera_info', qos)
    i = 0
    try:
        while rclpy.ok():
            i += 1
            header = Header(frame_id=FRAME_ID)
            header.stamp.sec = i
            info = CameraInfo(header=header, width=calib['width'], height=calib['height'],
                              distortion_model='plumb_bob', d=[0.0] * 5, k=calib['k'],
                              r=[1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0])
            img = Image(header=header, height=bgr.shape[0], width=bgr.shape[1], encoding='bgr8',
                        step=bgr.shape[1] * 3)
            info_pub.publish(info)
            img_pub.publish(fill_image_data(img, bgr))
            time.sleep(1.0 / rate)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
