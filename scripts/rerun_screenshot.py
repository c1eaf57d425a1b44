"""The README picture of "Seeing it": Rerun's web viewer showing a tt-depth-batch output bag.

Run it inside a loopback-only network namespace: the viewer's web and gRPC servers listen on
sockets (bound to 127.0.0.1 here as well) and Chromium must reach them from the same namespace:

    unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' \
        .venv/bin/python scripts/rerun_screenshot.py

1. A sample bag (tools/bag/sample.py: the procedural corridor, 336x252, 3 frames).
2. `tt-depth-batch` over it, camera /camera, `points_format: xyzrgb`. The network is the bag's
   ground truth (test/support/fake_engines/ground_truth.py, a test double, so the picture shows
   true depth); every message is built by the real batch code.
3. Rerun's own MCAP loader reads the output bag and the input image. A Rerun lens maps the cloud's
   packed `rgb` field to Points3D colours (this Rerun keeps that field as a plain column and draws
   the cloud in one colour); a blueprint lays out image, depth and cloud. Both are written to an
   .rrd and an .rbl.
4. `rerun --serve-web` serves them; headless Chromium (WebGL on SwiftShader) opens the viewer
   through its DevTools pipe, waits until the picture stops changing and saves it as a 256-colour
   PNG (default docs/images/rerun_batch.png).

Needs the Jazzy venv (rerun-sdk from requirements/viewer.txt) and the Debian package `chromium`.
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
APP_ID = 'tt_depth_batch'
FRAME = 'camera_optical_frame'
SIZE = (336, 252)            # multiples of 14: the ground-truth engine runs at the camera size
CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update',
                  '--disable-sync', '--hide-scrollbars',
                  # WebGL without a GPU: SwiftShader, Chromium's software renderer
                  '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
                  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']


def batch_output(work: Path) -> tuple[Path, Path]:
    """Sample bag and its tt-depth-batch output: (input MCAP, output MCAP)."""
    from tt_depth_ros.tools.bag import sample as sample_bag
    from tt_depth_ros.tools.eval import scene_render

    bag = work / 'bags' / 'corridor'
    sample_bag.generate(bag, sample_bag.SampleBagConfig(width=SIZE[0], height=SIZE[1], frames=3))
    focal = float(scene_render.intrinsics(*SIZE)[0, 0])
    params = {'engine_plugin': 'support.fake_engines.ground_truth:GroundTruthEngine',
              'engine_plugin_args': json.dumps({'bag': str(bag), 'focal': focal}),
              'network_height': SIZE[1], 'network_width': SIZE[0], 'points_format': 'xyzrgb',
              'input_reliability': 'reliable'}
    yaml = work / 'depth.yaml'
    yaml.write_text('/**:\n  ros__parameters:\n' + ''.join(
        f'    {k}: {json.dumps(v)}\n' for k, v in params.items()))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / 'test'), str(ROOT)]))
    subprocess.run([sys.executable, '-m', 'tt_depth_ros.tools.batch.run', str(bag), '--params',
                    str(yaml), '--out', str(work / 'out'), '--camera',
                    f'image={sample_bag.IMAGE},camera_info={sample_bag.CAMERA_INFO}'],
                   check=True, env=env, cwd=ROOT)
    return bag / 'corridor.mcap', work / 'out' / 'corridor' / 'corridor.mcap'


def _packed_rgb_to_rgba(values):
    """PointCloud2's float `rgb` (0x00RRGGBB in its bits) -> Rerun Color (0xRRGGBBAA)."""
    import pyarrow as pa

    bits = np.asarray(values.to_numpy(zero_copy_only=False), np.float32).view(np.uint32)
    return pa.array((bits << 8) | 0xFF, pa.uint32())


def recording(source: Path, output: Path, rrd: Path, rbl: Path) -> None:
    """The output bag (and the input image) through Rerun's loader, colours by a lens."""
    import rerun as rr
    import rerun.blueprint as rrb
    from rerun.chunk import DeriveLens, LazyChunkStream, McapReader, Selector

    colours = DeriveLens('Points3D:rgb').to_component(
        rr.Points3D.descriptor_colors(), Selector('.').pipe(_packed_rgb_to_rgba))
    out = McapReader(output).stream().lenses(colours, output_mode='forward_all')
    image = McapReader(source, include_topic_regex=['^/camera/image_raw$']).stream()
    LazyChunkStream.merge(out, image).write_rrd(rrd, application_id=APP_ID,
                                                recording_id='corridor')
    rrb.Blueprint(
        rrb.Horizontal(
            rrb.Vertical(rrb.Spatial2DView(origin='/camera/image_raw', name='/camera/image_raw'),
                         rrb.Spatial2DView(origin='/camera/depth', name='/camera/depth (m)')),
            rrb.Spatial3DView(
                origin='/camera', name='/camera/points (xyzrgb)',
                contents=['/camera/points', '/camera/depth/camera_info'],
                spatial_information=rrb.SpatialInformation(target_frame=FRAME, show_axes=True),
                # optical frame: x right, y down, z forward; seen from above, behind, to the left
                eye_controls=rrb.EyeControls3D(position=(-3.0, -2.5, -2.5),
                                               look_target=(0.0, 0.3, 3.0), eye_up=(0, -1, 0))),
            column_shares=[1, 2]),
        rrb.TimePanel(state='collapsed'), rrb.BlueprintPanel(state='collapsed'),
        rrb.SelectionPanel(state='collapsed'),
    ).save(APP_ID, rbl)


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe (fds 3 and 4): JSON + NUL."""

    def __init__(self, exe: str, profile: Path, size: tuple[int, int]):
        to_chrome, self._w = os.pipe()
        self._r, from_chrome = os.pipe()

        def child_fds():
            a, b = os.dup(to_chrome), os.dup(from_chrome)   # above 4 before taking 3 and 4
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, *CHROMIUM_FLAGS, f'--user-data-dir={profile}', '--remote-debugging-pipe',
             f'--window-size={size[0]},{size[1]}', 'about:blank'],
            preexec_fn=child_fds, close_fds=False, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self._buf, self._id, self.session = b'', 0, None
        page = next(t for t in self.call('Target.getTargets')['targetInfos'] if t['type'] == 'page')
        self.session = self.call('Target.attachToTarget', targetId=page['targetId'],
                                 flatten=True)['sessionId']

    def call(self, method: str, browser: bool = False, **params):
        self._id += 1
        msg = {'id': self._id, 'method': method, 'params': params}
        if self.session and not browser:
            msg['sessionId'] = self.session
        os.write(self._w, json.dumps(msg).encode() + b'\0')
        while True:
            while b'\0' not in self._buf:
                data = os.read(self._r, 1 << 20)
                if not data:
                    raise RuntimeError(f'Chromium closed the DevTools pipe during {method}')
                self._buf += data
            raw, self._buf = self._buf.split(b'\0', 1)
            reply = json.loads(raw)
            if reply.get('id') == self._id:
                if 'error' in reply:
                    raise RuntimeError(f'{method}: {reply["error"]}')
                return reply['result']

    def close(self):
        try:
            self.call('Browser.close', browser=True)
            self.proc.wait(10)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def settled_screenshot(tools: DevTools, url: str, size: tuple[int, int],
                       timeout: float) -> np.ndarray:
    """Open `url`; the first screenshot equal to the one before it, once the viewer has drawn."""
    from PIL import Image

    tools.call('Page.enable')
    tools.call('Emulation.setDeviceMetricsOverride', width=size[0], height=size[1],
               deviceScaleFactor=1, mobile=False)
    tools.call('Page.navigate', url=url)
    before, deadline = None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(2.0)
        png = base64.b64decode(tools.call('Page.captureScreenshot', format='png')['data'])
        img = np.asarray(Image.open(io.BytesIO(png)).convert('RGB'))
        # the loading page is a few flat colours; the viewer's views hold thousands
        drawn = len(np.unique(img.reshape(-1, 3), axis=0)) > 2000
        if drawn and before is not None and np.array_equal(img, before):
            return img
        before = img if drawn else None
    raise TimeoutError(f'the Rerun web viewer did not settle within {timeout:.0f} s')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', type=Path, default=ROOT / 'docs' / 'images' / 'rerun_batch.png')
    ap.add_argument('--size', default='1280x720', help='browser window WxH')
    ap.add_argument('--timeout', type=float, default=180.0, help='seconds for the viewer to draw')
    ap.add_argument('--chromium', default='/usr/bin/chromium')
    args = ap.parse_args(argv)
    if not set(psutil.net_if_addrs()) <= {'lo'}:
        sys.exit('rerun_screenshot: run inside a loopback-only network namespace: '
                 "unshare -n sh -c 'ip link set lo up && exec \"$0\" \"$@\"' "
                 '.venv/bin/python scripts/rerun_screenshot.py')
    if not Path(args.chromium).is_file():
        sys.exit(f'rerun_screenshot: no Chromium at {args.chromium} (Debian package "chromium")')
    size = tuple(int(v) for v in args.size.split('x'))
    with tempfile.TemporaryDirectory(prefix='rerun_shot_') as tmp:
        work = Path(tmp)
        source, output = batch_output(work)
        recording(source, output, work / 'corridor.rrd', work / 'corridor.rbl')
        grpc, web = free_port(), free_port()
        env = dict(os.environ, XDG_CONFIG_HOME=str(work / 'config'),
                   XDG_DATA_HOME=str(work / 'data'))   # rerun's settings: not the user's home
        viewer = subprocess.Popen(
            [str(Path(sys.executable).parent / 'rerun'), '--serve-web', '--bind', '127.0.0.1',
             '--port', str(grpc), '--web-viewer-port', str(web), str(work / 'corridor.rrd'),
             str(work / 'corridor.rbl')], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tools = None
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(('127.0.0.1', web), 0.5).close()
                    break
                except OSError:
                    if viewer.poll() is not None or time.monotonic() > deadline:
                        sys.exit(f'rerun_screenshot: the web viewer did not start '
                                 f'(exit {viewer.poll()})')
                    time.sleep(0.2)
            tools = DevTools(args.chromium, work / 'profile', size)
            url = (f'http://127.0.0.1:{web}/?url=rerun%2Bhttp%3A%2F%2F127.0.0.1%3A{grpc}'
                   '%2Fproxy')
            img = settled_screenshot(tools, url, size, args.timeout)
        finally:
            if tools is not None:
                tools.close()
            os.killpg(viewer.pid, signal.SIGTERM)
            viewer.wait(10)
    from PIL import Image

    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).quantize(256).save(args.out, optimize=True)
    print(f'rerun_screenshot: {args.out} ({args.out.stat().st_size // 1024} KiB, '
          f'{img.shape[1]}x{img.shape[0]})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
