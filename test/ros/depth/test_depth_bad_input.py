"""Bad input never kills the depth node (which runs in its own process).

Each case gives a throttled log line, a diagnostics count and a skipped frame, and the next good
frame is processed normally.
"""
import array
import os
import signal
import time

import cv2
import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Header

from support.procs import spawn, wait_for
from support.rosutil import BEST_EFFORT, KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.ros.runtime.diagnostics import status_values

pytestmark = pytest.mark.ros
W, H = 160, 120
K = np.array([[150.0, 0, 79.5], [0, 150.0, 59.5], [0, 0, 1]])
PARAMS = {'engine_plugin': KNOWN_ENGINE, 'input_reliability': 'reliable',
          'max_image_pixels': 1_000_000, 'diagnostics_period': 0.2,
          'camera_info_sync': 'latest'}   # one CameraInfo (stamp 0) serves every frame


def _hdr(sec):
    h = Header(frame_id='cam')
    h.stamp.sec = sec
    return h


class Harness:
    def __init__(self, probe, ns, compressed=False):
        self.probe, self.ns, self.node = probe, ns, f'{ns}/depth_node'
        probe.subscribe(Image, f'{ns}/depth', RELIABLE)
        probe.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
        topic = f'{ns}/image/compressed' if compressed else f'{ns}/image'
        self.img = probe.publisher(CompressedImage if compressed else Image, topic)
        self.info = probe.publisher(CameraInfo, f'{ns}/camera_info')

    def diag(self) -> dict:
        for arr in reversed(self.probe.got('/diagnostics')):
            for st in arr.status:
                if st.name == self.node:
                    return status_values(st)
        return {}

    def wait_rejected(self, reason, n=1):
        wait_for(lambda: int(self.diag().get(f'rejected_{reason}', 0)) >= n, 15,
                 what=f'diagnostics rejected_{reason} >= {n}: {self.diag()}')

    def depth_for(self, sec):
        return [m for m in self.probe.got(f'{self.ns}/depth') if m.header.stamp.sec == sec]

    def good(self, sec, msg=None):
        """Send a good frame (resending) until its depth comes back."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            self.img.publish(msg if msg is not None else
                             rgb_image_msg(np.full((H, W, 3), 120, np.uint8), _hdr(sec)))
            t = time.monotonic() + 1.0
            while time.monotonic() < t:
                if self.depth_for(sec):
                    return
                time.sleep(0.02)
        raise AssertionError(f'good frame {sec} not processed; diag {self.diag()}')

    def send_info(self, info=None):
        self.info.publish(info if info is not None else camera_info_for(K, W, H, _hdr(0)))
        time.sleep(0.1)


@pytest.fixture(scope='module')
def probe():
    p = RosProbe('bad_probe')
    yield p
    p.close()


def _raw(sec, **fields):
    msg = rgb_image_msg(np.full((H, W, 3), 7, np.uint8), _hdr(sec))
    for k, v in fields.items():
        setattr(msg, k, v)
    return msg


def test_bad_raw_inputs(probe):
    h = Harness(probe, '/bad')
    with spawn(depth_node_cmd('/bad', PARAMS), env=child_env(), name='bad-node') as proc:
        probe.wait_matched(h.img, timeout=60)
        probe.wait_state(h.node, 'active', 30)
        # missing, then late CameraInfo
        h.img.publish(_raw(1))
        h.wait_rejected('no_camera_info')
        h.send_info()
        h.good(2)
        # unsupported encoding x5: counted 5 times, logged once (throttled). Input QoS is
        # KEEP_LAST 1 (latest wins even when reliable), so each is sent after the previous counted.
        for n, s in enumerate(range(3, 8), 1):
            h.img.publish(_raw(s, encoding='32FC1'))
            h.wait_rejected('encoding', n)
        h.good(8)
        h.img.publish(_raw(9, data=array.array('B', bytes(W * H * 3 - 5))))
        h.wait_rejected('data_size')
        h.good(10)
        h.img.publish(_raw(11, height=0, width=0, step=0, data=array.array('B')))
        h.wait_rejected('size')
        h.good(12)
        huge = rgb_image_msg(np.zeros((1000, 1200, 3), np.uint8), _hdr(13))
        h.img.publish(huge)
        h.wait_rejected('size', 2)
        h.good(14)
        h.img.publish(_raw(15, step=W * 3 - 3, data=array.array('B', bytes((W * 3 - 3) * H))))
        h.wait_rejected('decode')
        h.good(16)
        # invalid CameraInfo: fx = 0, then NaN; each rejects the frame until a valid one arrives
        for sec, bad in ((17, 0.0), (19, float('nan'))):
            info = camera_info_for(K, W, H, _hdr(0))
            info.p[0] = bad
            h.send_info(info)
            h.img.publish(_raw(sec))
            h.wait_rejected('camera_info_invalid', 1 if sec == 17 else 2)
            h.send_info()
            h.good(sec + 1)
        h.send_info(camera_info_for(K, 640, 360, _hdr(0)))     # another aspect: rejected
        h.img.publish(_raw(21))
        h.wait_rejected('camera_info_size')
        h.send_info()
        h.good(22)
        # stamps going backwards (bag loop): that frame is skipped, the next newer one processed
        n10 = len(h.depth_for(10))
        h.img.publish(_raw(10))
        h.wait_rejected('stamp_backwards')
        h.good(23)
        assert len(h.depth_for(10)) == n10          # the looped-back frame was not processed
        log = proc.log_text()
        assert log.count('frame skipped [encoding]') == 1, log
        for reason in ('no_camera_info', 'data_size', 'size', 'decode', 'camera_info_invalid',
                       'camera_info_size', 'stamp_backwards'):
            assert f'frame skipped [{reason}]' in log, reason
        assert proc.poll() is None
        d = h.diag()
        assert d['state'] == 'active' and int(d['errors']) == 0 and d['last_error']
        # a best-effort camera against this reliable subscription: the node logs the mismatch
        probe.publisher(Image, '/bad/image', BEST_EFFORT)
        wait_for(lambda: 'incompatible QoS on subscription' in proc.log_text(), 15,
                 what='incompatible-QoS log line')
        # SIGTERM: clean shutdown (worker joined, engine closed) and exit code 0
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(20) == 0, proc.log_text()
        assert 'terminate called' not in proc.log_text()


def test_corrupt_compressed_input(probe):
    h = Harness(probe, '/badc', compressed=True)
    params = dict(PARAMS, input_transport='compressed')
    with spawn(depth_node_cmd('/badc', params), env=child_env(), name='badc-node') as proc:
        probe.wait_matched(h.img, timeout=60)
        h.send_info()
        ok, jpg = cv2.imencode('.jpg', np.full((H, W, 3), 99, np.uint8))
        good = CompressedImage(header=_hdr(1), format='jpeg', data=array.array('B', jpg.tobytes()))
        h.send_info()
        h.good(1, good)
        corrupt = CompressedImage(header=_hdr(2), format='jpeg',
                                  data=array.array('B', b'\xff\xd8garbage' * 10))
        h.img.publish(corrupt)
        h.wait_rejected('decode')
        good.header = _hdr(3)
        h.good(3, good)
        assert proc.poll() is None and 'frame skipped [decode]' in proc.log_text()
