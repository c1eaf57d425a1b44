"""Overload: frames at 10x the engine rate for a few thousand frames (bounded, ~10 s).

The node (own process, known-depth engine sleeping 50 ms per frame = 20 Hz) receives 2000 frames at
~200 Hz. A latest-frame mailbox must keep latency bounded (a queue would grow it to minutes), count
every replaced frame as a drop and report it on /diagnostics, and keep the process RSS flat.
Bounds are generous (boundedness, not speed): timing figures belong to benchmarks.
"""
import time

import numpy as np
import psutil
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from support.procs import spawn
from support.rosutil import BEST_EFFORT, KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.ros.runtime.diagnostics import status_values

# serial: 200 Hz publishing and latency/drop bounds; CPU load from other tests would stretch them
pytestmark = [pytest.mark.ros, pytest.mark.serial]
NS, NODE = '/ovl', '/ovl/depth_node'
FRAMES, RATE_HZ, ENGINE_S = 2000, 200.0, 0.05


def test_overload_bounded_latency_drops_flat_memory():
    probe = RosProbe('ovl_probe')
    params = {'engine_plugin': KNOWN_ENGINE, 'engine_plugin_args': f'{{"delay_s": {ENGINE_S}}}',
              'process_res': 112, 'diagnostics_period': 0.5, 'input_reliability': 'best_effort',
              'camera_info_sync': 'latest'}   # CameraInfo every 50 frames
    probe.subscribe(Image, f'{NS}/depth', RELIABLE)
    probe.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
    img_pub = probe.publisher(Image, f'{NS}/image', BEST_EFFORT)
    info_pub = probe.publisher(CameraInfo, f'{NS}/camera_info', RELIABLE)
    try:
        with spawn(depth_node_cmd(NS, params), env=child_env(), name='ovl-node') as proc:
            probe.wait_matched(img_pub, timeout=60)
            probe.wait_state(NODE, 'active', 30)
            rgb = np.full((120, 160, 3), 80, np.uint8)
            K = np.array([[150.0, 0, 79.5], [0, 150.0, 59.5], [0, 0, 1]])
            rss = {}
            t0 = time.monotonic()
            for i in range(FRAMES):
                stamp = probe.node.get_clock().now().to_msg()
                msg = rgb_image_msg(rgb, Header(stamp=stamp, frame_id='cam'))
                if i % 50 == 0:
                    info_pub.publish(camera_info_for(K, 160, 120, msg.header))
                img_pub.publish(msg)
                if i in (FRAMES // 3, FRAMES - 1):
                    rss[i] = psutil.Process(proc.pid).memory_info().rss
                delay = t0 + (i + 1) / RATE_HZ - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            time.sleep(1.0)
            received = probe.msgs[f'{NS}/depth']
            lat = np.array([t_recv - (m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)
                            for t_recv, m in _wall(received)])
            diag = _last_diag(probe)
            print(f'published {len(lat)} of {FRAMES}; latency p50 {np.median(lat) * 1e3:.0f} ms, '
                  f'max {lat.max() * 1e3:.0f} ms; diag {diag}; rss {rss}')
            assert len(lat) > 20, proc.log_text()
            assert lat[len(lat) // 2:].max() < 40 * ENGINE_S      # a queue would reach minutes
            assert int(diag['dropped_mailbox']) > FRAMES // 3
            accounted = int(diag['published']) + int(diag['dropped_mailbox']) + \
                int(diag['rejected_total'])
            assert int(diag['received']) - accounted <= 2
            assert float(diag['latency_p95_ms']) < 40 * ENGINE_S * 1e3
            assert rss[FRAMES - 1] - rss[FRAMES // 3] < 30 * 2**20, rss
            for key in ('input_rate_hz', 'output_rate_hz', 'latency_p50_ms', 'latency_max_ms',
                        'stage_decode_ms', 'stage_resize_ms', 'stage_infer_ms',
                        'stage_postprocess_ms', 'stage_publish_ms', 'last_error'):
                assert key in diag, key
            assert float(diag['input_rate_hz']) > float(diag['output_rate_hz']) > 0
            assert (diag['backend'], diag['device'], diag['state']) == \
                ('test-double', 'cpu', 'active')
            assert proc.poll() is None
    finally:
        probe.close()


def _wall(received):
    """(receive wall time, msg): the probe records monotonic time; convert to wall clock."""
    offset = time.time() - time.monotonic()
    return [(t + offset, m) for t, m in list(received)]


def _last_diag(probe) -> dict:
    for arr in reversed(probe.got('/diagnostics')):
        for st in arr.status:
            if st.name == NODE:
                return status_values(st)
    raise AssertionError('no diagnostics from the node')
