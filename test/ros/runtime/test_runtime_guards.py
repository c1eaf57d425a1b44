"""Guards of a node on a shared ROS graph, through a real depth node process.

- No code execution by parameter: `engine_plugin` / `engine_plugin_args` are read-only (chosen at
  process start); `set_parameters` on them is refused in every state, and the next configure still
  builds the engine chosen at start.
- Bounded decoding: a 389 KB PNG declaring 20000x20000 is rejected from its header (RSS growth
  < 150 MB; decoding it would allocate 1.2 GB), reported in diagnostics and the log; a normal
  JPEG and PNG are still decoded afterwards.
- Drop rate: diagnostics go WARN while more than `drop_warn_ratio` of the frames handed to the
  worker are dropped, and back to OK when the input slows down.
"""
import struct
import time
import zlib

import cv2
import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Header

from support.procs import rss_mb, spawn, wait_for
from support.rosutil import BEST_EFFORT, KNOWN_ENGINE, RELIABLE, RosProbe, child_env, depth_node_cmd
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.ros.msgs.image_codec import ImageDecodeError, compressed_image_size
from tt_depth_ros.ros.runtime.diagnostics import status_values

pytestmark = pytest.mark.ros


@pytest.fixture(scope='module')
def probe():
    p = RosProbe('guards_probe')
    yield p
    p.close()


def _header(probe) -> Header:
    return Header(frame_id='cam', stamp=probe.node.get_clock().now().to_msg())


def _last_status(probe, node: str) -> DiagnosticStatus | None:
    for arr in reversed(probe.got('/diagnostics')):
        for st in arr.status:
            if st.name == node:
                return st
    return None


def test_engine_plugin_parameters_cannot_be_set_at_runtime(probe):
    ns, node = '/guard_params', '/guard_params/depth_node'
    params = {'engine_plugin': KNOWN_ENGINE, 'autostart': False}
    with spawn(depth_node_cmd(ns, params), env=child_env(), name='guard-params') as proc:
        assert probe.get_state(node, timeout=60) == 'unconfigured'
        for name, value in (('engine_plugin', 'os:system'),
                            ('engine_plugin_args', '{"command": "touch /tmp/pwned"}')):
            res = probe.set_params(node, {name: value})
            assert not res[0].successful and 'read-only' in res[0].reason.lower(), res
        res = probe.set_params(node, {'engine_plugin': 'os:system',
                                      'engine_plugin_args': '{"command": "true"}'})
        assert not any(r.successful for r in res), res
        assert probe.change_state(node, 'configure') is True, proc.log_text()
        assert f'engine from plugin {KNOWN_ENGINE}' in proc.log_text()
        assert 'os:system' not in proc.log_text()
        res = probe.set_params(node, {'engine_plugin': 'os:system'})
        assert not res[0].successful and 'read-only' in res[0].reason.lower(), res


def _png_bomb(width: int = 20000, height: int = 20000) -> bytes:
    """A valid 8-bit grayscale PNG of zeros: ~389 KB declaring width x height."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack('>I', len(data)) + kind + data
                + struct.pack('>I', zlib.crc32(kind + data) & 0xFFFFFFFF))
    comp = zlib.compressobj(9)
    row = b'\0' * (width + 1)          # filter byte + pixels
    body = b''.join(comp.compress(row) for _ in range(height)) + comp.flush()
    ihdr = struct.pack('>IIBBBBB', width, height, 8, 0, 0, 0, 0)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', body)
            + chunk(b'IEND', b''))


def test_header_sizes_of_png_and_jpeg_and_refusals():
    img = np.random.default_rng(0).integers(0, 255, (37, 53, 3), dtype=np.uint8)
    for ext, flags in (('.png', []), ('.jpg', []), ('.jpg', [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])):
        ok, enc = cv2.imencode(ext, img, flags)
        assert ok and compressed_image_size(enc.tobytes()) == (53, 37), ext
    bomb = _png_bomb(2000, 3000)
    assert compressed_image_size(bomb) == (2000, 3000)
    for bad in (b'', b'GIF89a\x01\x00\x01\x00', b'\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR',
                b'\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00'):
        with pytest.raises(ImageDecodeError):
            compressed_image_size(bad)


def test_compressed_bomb_is_rejected_from_its_header(probe):
    ns, node = '/guard_bomb', '/guard_bomb/depth_node'
    bomb = _png_bomb()
    assert 300_000 < len(bomb) < 500_000
    params = {'engine_plugin': KNOWN_ENGINE, 'camera_info_mode': 'default_focal',
              'input_transport': 'compressed', 'input_reliability': 'reliable',
              'diagnostics_period': 0.2, 'bad_input_log_period': 0.0}
    pub = probe.publisher(CompressedImage, f'{ns}/image/compressed', RELIABLE)
    probe.subscribe(Image, f'{ns}/depth', RELIABLE)
    probe.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
    with spawn(depth_node_cmd(ns, params), env=child_env(), name='guard-bomb') as proc:
        probe.wait_matched(pub, timeout=60)
        wait_for(lambda: 'autostart: active' in proc.log_text(), 30, what='active')
        before = rss_mb(proc.pid)
        peak = before
        for _ in range(3):
            pub.publish(CompressedImage(header=_header(probe), format='png', data=bomb))
            time.sleep(0.3)
            peak = max(peak, rss_mb(proc.pid))
        wait_for(lambda: 'declares 20000x20000' in proc.log_text(), 10, what='bomb rejected')
        for _ in range(10):
            time.sleep(0.1)
            peak = max(peak, rss_mb(proc.pid))
        assert peak - before < 150, (before, peak)
        # input_depth 1: a reliable reader may keep only the newest of bombs sent back to back,
        # so count what arrived (one log line each, bad_input_log_period 0) against diagnostics
        logged = proc.log_text().count('declares 20000x20000')
        assert logged >= 1
        st = wait_for(lambda: (s := _last_status(probe, node)) is not None
                      and int(status_values(s).get('rejected_size', 0)) == logged and s, 10,
                      what=f'diagnostics counting the {logged} rejections')
        assert st.level == DiagnosticStatus.WARN and '20000x20000' in st.message, st
        # ordinary compressed frames still decode and flow
        img = np.full((48, 64, 3), 120, np.uint8)
        for ext in ('.jpg', '.png'):
            data = cv2.imencode(ext, img)[1].tobytes()
            probe.clear(f'{ns}/depth')
            wait_for(lambda d=data, e=ext: pub.publish(CompressedImage(
                header=_header(probe), format=e[1:], data=d)) or probe.got(f'{ns}/depth'), 15,
                interval=0.2, what=f'depth from a {ext} frame')
        assert proc.poll() is None


@pytest.mark.serial   # an engine at 5 Hz against inputs at 2 and 40 Hz: rates need the CPU
def test_diagnostics_warn_when_the_drop_rate_exceeds_the_parameter(probe):
    ns, node = '/guard_drops', '/guard_drops/depth_node'
    params = {'engine_plugin': KNOWN_ENGINE, 'engine_plugin_args': '{"delay_s": 0.2}',
              'camera_info_mode': 'default_focal', 'diagnostics_period': 0.25,
              'drop_warn_ratio': 0.5}
    pub = probe.publisher(Image, f'{ns}/image', BEST_EFFORT)
    probe.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
    img = np.full((48, 64, 3), 90, np.uint8)

    def feed(rate_hz: float, seconds: float) -> None:
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            pub.publish(rgb_image_msg(img, _header(probe)))
            time.sleep(1.0 / rate_hz)

    with spawn(depth_node_cmd(ns, params), env=child_env(), name='guard-drops') as proc:
        probe.wait_matched(pub, timeout=60)
        wait_for(lambda: 'autostart: active' in proc.log_text(), 30, what='active')
        feed(2.0, 3.0)          # engine 5 Hz, input 2 Hz: nothing dropped
        st = _last_status(probe, node)
        assert st is not None and st.level == DiagnosticStatus.OK, st
        assert float(status_values(st)['drop_rate_window']) < 0.2
        feed(40.0, 3.0)         # input 40 Hz: ~85 % replaced unprocessed
        st = _last_status(probe, node)
        assert st.level == DiagnosticStatus.WARN, st
        assert 'drop_warn_ratio' in st.message
        assert float(status_values(st)['drop_rate_window']) > 0.5
        assert probe.set_params(node, {'drop_warn_ratio': 0.95})[0].successful  # runtime
        feed(40.0, 1.0)
        time.sleep(0.5)
        st = _last_status(probe, node)
        assert st.level == DiagnosticStatus.OK, st
        probe.set_params(node, {'drop_warn_ratio': 0.5})
        feed(2.0, 6.0)          # the window forgets the overload
        st = _last_status(probe, node)
        assert st.level == DiagnosticStatus.OK, st
