"""Host overhead of the depth node per frame (everything but the network), printed, not asserted.

Target (docs/design.md §4): <= 1.5 ms depth + cloud, <= 1 ms depth only, for a 640x480 frame.
Runs the node's real per-frame code in-process with the known-depth engine double (no sleep) and
reports the median stage times from the node's own statistics; the engine's time ('infer') is
subtracted.
Each case runs twice, side by side: 'host resize' (engines that take network-size images: torch
on CPU, onnxruntime, ttnn today) and 'engine resize' (an engine that `resizes_on_device`, as
torch-cuda does: the double takes the camera image and the resize matrices, so the resize leaves
the node's CPU). The sky-band cases (top 80 network rows +Inf) take the masked resample path.

    PYTHONPATH=test .venv/bin/python -m benchmarks.bench_depth_host_overhead [frames]

(test/ on PYTHONPATH: the engine double is the tests' support.fake_engines.known_depth.)
"""
import json
import sys
import time

from benchmarks import require_test_helpers
from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env

require_test_helpers('bench_depth_host_overhead')

apply_loopback_env()
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from tt_depth_ros.ros.depth.node import DepthNode  # noqa: E402
from tt_depth_ros.ros.msgs.camera_info import camera_geometry, camera_info_for  # noqa: E402
from tt_depth_ros.ros.msgs.depth import fill_image_data  # noqa: E402


def run(points: bool, frames: int, sky_rows: int = 0, engine_resize: bool = False) -> dict:
    args = {'sky_rows': sky_rows, 'resize_on_device': engine_resize}
    node = DepthNode('bench_depth', parameter_overrides=[
        Parameter('engine_plugin', value='support.fake_engines.known_depth:KnownDepthEngine'),
        Parameter('engine_plugin_args', value=json.dumps(args)),
        Parameter('points_enable', value=points), Parameter('autostart', value=False),
        Parameter('camera_info_sync', value='latest')])   # one CameraInfo for every frame
    peer = rclpy.create_node('bench_peer')
    peer.create_subscription(PointCloud2, 'points', lambda m: None, 1)
    node.trigger_configure()
    node.trigger_activate()
    K = np.array([[525.0, 0, 319.5], [0, 525.0, 239.5], [0, 0, 1]])
    info = camera_info_for(K, 640, 480, Header())
    node.camera_infos.put('camera', 0, info, camera_geometry(info))
    bgr = np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    from sensor_msgs.msg import Image
    msg = fill_image_data(Image(height=480, width=640, encoding='bgr8', step=1920), bgr)
    time.sleep(0.5)   # graph: the peer's subscription is visible to get_subscription_count
    for i in range(frames):
        msg.header.stamp.sec = i
        node.process(msg)
    if node.engine.camera_calls != (frames if engine_resize else 0):
        raise RuntimeError(f'engine_resize={engine_resize}: the engine took '
                           f'{node.engine.camera_calls} camera images of {frames}')
    snap = node.stats.snapshot()['stages_ms']
    node.trigger_deactivate()
    node.trigger_cleanup()
    node.destroy_node()
    peer.destroy_node()
    host = sum(v for k, v in snap.items() if not k.startswith('engine_')) - snap['infer']
    return {'host_ms': host, **snap}


def main() -> None:
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rclpy.init()
    run(True, frames // 4)      # warms caches
    for points, sky in ((True, 0), (False, 0), (True, 80), (False, 80)):
        for engine_resize in (False, True):
            r = run(points, frames, sky, engine_resize)
            stages = ', '.join(f'{k} {v:.2f}' for k, v in r.items() if k != 'host_ms')
            print(f'640x480 bgr8 -> 378x504, depth{" + cloud" if points else " only"}'
                  f'{", sky band" if sky else ""}, '
                  f'{"engine" if engine_resize else "host"} resize: '
                  f'host overhead {r["host_ms"]:.2f} ms/frame (median stages ms: {stages})')
    rclpy.shutdown()


if __name__ == '__main__':
    main()
