"""Rerun, a real viewer, opens a tt-depth-batch output bag with its own MCAP / ROS 2 loader.

One batch run (a subprocess like a user's: the tiny model, one camera of a generated MCAP bag,
`points_format: xyzrgb`). Rerun's `McapReader` (the loader behind `rerun OUT.mcap`, not our code)
decodes the output, and what it made is compared with the bags read back with rclpy and rosbags:
`depth` is a DepthImage holding the same metres, `depth/camera_info` a Pinhole with the same K
that the depth image hangs from, `points` a Points3D with the same positions, the cloud's packed
`rgb` field beside them on the same entity as a per-point `Points3D:rgb` column whose colours are
the camera image's pixels. (This Rerun keeps that field as data, not as `Points3D:colors`: the
viewer draws the cloud in one colour unless a lens maps it, as scripts/rerun_screenshot.py does.)
Then `rerun --serve-web` serves the output to a browser, listening on loopback only.

rerun-sdk is test-only, pinned in requirements/viewer.txt: scripts/bootstrap.sh installs it into
the Jazzy venv, where the non-ROS tests run.
"""
import importlib.util
import ipaddress
import os
import socket
import sys
import urllib.request
from pathlib import Path

import numpy as np
import psutil
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from support.batch_runs import CFG, PARAMS, bag_messages, manifest, run_batch, write_params_file
from support.da3_fixtures import tiny_state_dict, write_safetensors
from support.procs import spawn, wait_for
from tt_depth_ros.tools.bag import sample as sample_bag

NS, FRAME = '/camera', sample_bag.FRAME_LEFT
IN_CI = os.environ.get('CI', '').lower() == 'true'


def _need(ok: bool, msg: str) -> None:
    if not ok:
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope='module')
def out(tmp_path_factory):
    """The batch output bag, its messages and the source bag's camera images, by stamp."""
    _need(importlib.util.find_spec('rerun') is not None,
          'rerun-sdk is not installed: scripts/bootstrap.sh jazzy installs it '
          '(requirements/viewer.txt)')
    root = tmp_path_factory.mktemp('rerun_view')
    weights = write_safetensors(tiny_state_dict(), root / 'tiny.safetensors')
    write_params_file(root / 'depth.yaml', dict(PARAMS, weights_path=str(weights)))
    sample_bag.generate(root / 'bags' / 'scene', sample_bag.SampleBagConfig(**CFG))
    proc = run_batch(root / 'bags' / 'scene', '--params', root / 'depth.yaml', '--out',
                     root / 'out', '--camera',
                     f'image={sample_bag.IMAGE},camera_info={sample_bag.CAMERA_INFO}')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert manifest(root / 'out', 'scene')['frames']['out'] == CFG['frames']
    mcap = root / 'out' / 'scene' / 'scene.mcap'
    assert mcap.is_file(), sorted(p.name for p in (root / 'out' / 'scene').iterdir())

    def by_stamp(raws, cls):
        msgs = [deserialize_message(raw, cls) for _, raw in raws]
        return {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: m for m in msgs}

    got = bag_messages(root / 'out' / 'scene')
    src = bag_messages(root / 'bags' / 'scene')
    return {'mcap': mcap,
            'depth': by_stamp(got[f'{NS}/depth'], Image),
            'info': by_stamp(got[f'{NS}/depth/camera_info'], CameraInfo),
            'points': by_stamp(got[f'{NS}/points'], PointCloud2),
            'image': by_stamp(src[sample_bag.IMAGE], Image)}


@pytest.fixture(scope='module')
def rerun_columns(out):
    """What Rerun's own MCAP loader makes of the output: {(entity, component): column}.

    A column is {'archetype', 'type', 'rows': {ROS header stamp ns: the row's instances}}, gathered
    over every time-indexed chunk the loader yields (a cloud's positions come one chunk per message,
    its other fields in one chunk of their own).
    """
    import pyarrow as pa
    from rerun.chunk import McapReader

    cols = {}
    for chunk in McapReader(out['mcap']).stream():
        if chunk.is_static:         # channel / schema descriptions, statistics
            continue
        batch = chunk.to_record_batch()
        stamps = batch.column('ros2_timestamp').cast(pa.int64()).to_pylist()
        for field in batch.schema:
            meta = field.metadata or {}
            if meta.get(b'rerun:kind') != b'data':
                continue
            col = cols.setdefault((chunk.entity_path, field.name), {
                'archetype': meta.get(b'rerun:archetype', b'').decode(),
                'type': meta.get(b'rerun:component_type', b'').decode(), 'rows': {}})
            for t, cell in zip(stamps, batch.column(field.name)):
                assert t not in col['rows'], (chunk.entity_path, field.name, t)
                col['rows'][t] = cell.values
    return cols


def _column(cols, entity, component, archetype, component_type, stamps):
    col = cols.get((entity, component))
    assert col is not None, f'{entity} {component} not decoded; Rerun made: {sorted(cols)}'
    assert (col['archetype'], col['type']) == (archetype, component_type), col
    assert sorted(col['rows']) == sorted(stamps), (entity, component)   # the ROS header stamps
    return col['rows']


def test_depth_is_a_depth_image_in_metres(out, rerun_columns):
    import rerun as rr

    depth, stamps = out['depth'], list(out['depth'])
    assert len(stamps) == CFG['frames']
    buffers = _column(rerun_columns, f'{NS}/depth', 'DepthImage:buffer',
                      'rerun.archetypes.DepthImage', 'rerun.components.ImageBuffer', stamps)
    formats = _column(rerun_columns, f'{NS}/depth', 'DepthImage:format',
                      'rerun.archetypes.DepthImage', 'rerun.components.ImageFormat', stamps)
    for t, msg in depth.items():
        assert msg.encoding == '32FC1'
        (fmt,) = formats[t].to_pylist()
        assert (fmt['width'], fmt['height']) == (msg.width, msg.height) == (CFG['width'],
                                                                            CFG['height'])
        assert fmt['channel_datatype'] == rr.encodings.ChannelDatatype.F32.value
        (blob,) = buffers[t].to_pylist()
        shown = np.frombuffer(bytes(blob), np.float32).reshape(msg.height, msg.width)
        ours = np.frombuffer(bytes(msg.data), np.float32).reshape(msg.height, msg.width)
        assert np.isfinite(ours).mean() > 0.5          # a depth map, not an empty frame
        np.testing.assert_array_equal(shown, ours)     # the same metres, NaN and +Inf kept


def test_camera_info_is_the_pinhole_the_depth_image_hangs_from(out, rerun_columns):
    stamps = list(out['info'])
    k_rows = _column(rerun_columns, f'{NS}/depth/camera_info', 'Pinhole:image_from_camera',
                     'rerun.archetypes.Pinhole', 'rerun.components.PinholeProjection', stamps)
    res_rows = _column(rerun_columns, f'{NS}/depth/camera_info', 'Pinhole:resolution',
                       'rerun.archetypes.Pinhole', 'rerun.components.Resolution', stamps)
    parents = _column(rerun_columns, f'{NS}/depth/camera_info', 'Pinhole:parent_frame',
                      'rerun.archetypes.Pinhole', 'rerun.components.TransformFrameId', stamps)
    children = _column(rerun_columns, f'{NS}/depth/camera_info', 'Pinhole:child_frame',
                       'rerun.archetypes.Pinhole', 'rerun.components.TransformFrameId', stamps)
    image_frames = _column(rerun_columns, f'{NS}/depth', 'CoordinateFrame:frame',
                           'rerun.archetypes.CoordinateFrame',
                           'rerun.components.TransformFrameId', stamps)
    for t, info in out['info'].items():
        (k,) = k_rows[t].to_pylist()
        # Rerun stores the 3x3 projection column-major
        np.testing.assert_allclose(np.reshape(k, (3, 3)).T, np.reshape(info.k, (3, 3)), rtol=1e-6)
        assert info.k[0] > 0 and info.k[4] > 0
        assert res_rows[t].to_pylist() == [[float(info.width), float(info.height)]]
        assert (info.width, info.height) == (out['depth'][t].width, out['depth'][t].height)
        assert parents[t].to_pylist() == [info.header.frame_id] == [FRAME]
        # the depth image lives on the pinhole's image plane: the viewer can project it in 3-D
        assert image_frames[t].to_pylist() == children[t].to_pylist()


def test_points_are_points3d_with_the_image_colours(out, rerun_columns):
    stamps = list(out['points'])
    positions = _column(rerun_columns, f'{NS}/points', 'Points3D:positions',
                        'rerun.archetypes.Points3D', 'rerun.components.Position3D', stamps)
    colours = _column(rerun_columns, f'{NS}/points', 'Points3D:rgb',
                      'rerun.archetypes.Points3D', '', stamps)
    frames = _column(rerun_columns, f'{NS}/points', 'CoordinateFrame:frame',
                     'rerun.archetypes.CoordinateFrame', 'rerun.components.TransformFrameId',
                     stamps)
    for t, cloud in out['points'].items():
        fields = {f.name: f.offset for f in cloud.fields}
        assert cloud.point_step == 32 and set(fields) == {'x', 'y', 'z', 'rgb'}   # xyzrgb
        rec = np.frombuffer(bytes(cloud.data), np.dtype({
            'names': list(fields), 'formats': ['<f4'] * len(fields),
            'offsets': list(fields.values()), 'itemsize': cloud.point_step}))
        xyz = np.stack([rec['x'], rec['y'], rec['z']], axis=-1)
        shown = np.asarray(positions[t].to_pylist(), np.float32)
        assert shown.shape == (cloud.height * cloud.width, 3)
        assert np.isfinite(xyz).all(axis=1).mean() > 0.5
        np.testing.assert_array_equal(shown, xyz)      # organized: invalid points stay NaN
        # the packed float `rgb` (0x00RRGGBB in its bits) decoded by Rerun, per point, equals the
        # camera image's pixel under it (the depth grid is the image grid here)
        bits = colours[t].to_numpy(zero_copy_only=False).astype(np.float32).view(np.uint32)
        rgb = np.stack([(bits >> 16) & 0xFF, (bits >> 8) & 0xFF, bits & 0xFF], axis=-1)
        image = out['image'][t]
        assert (image.encoding, image.width, image.height) == ('rgb8', cloud.width, cloud.height)
        pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(-1, 3)
        assert len(np.unique(pixels, axis=0)) > 10     # a textured scene, not one colour
        np.testing.assert_array_equal(rgb, pixels)
        assert frames[t].to_pylist() == [cloud.header.frame_id] == [FRAME]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_web_viewer_serves_the_output_on_loopback_only(out, tmp_path):
    """`rerun --serve-web OUT.mcap`: the viewer page and its wasm are served, nothing off loopback.

    Runs only in a loopback-only network namespace (the suite's `unshare -n`): the web server binds
    0.0.0.0 unless told otherwise.
    """
    _need(set(psutil.net_if_addrs()) <= {'lo'},
          'the Rerun web viewer test needs a loopback-only network namespace: run it under '
          '`unshare -n` as scripts/run_tests.sh does')
    grpc, web = _free_port(), _free_port()
    cmd = [str(Path(sys.executable).parent / 'rerun'), '--serve-web', '--bind', '127.0.0.1',
           '--port', str(grpc), '--web-viewer-port', str(web), str(out['mcap'])]
    # its analytics settings and data go to a temp home, not the user's
    env = {'XDG_CONFIG_HOME': str(tmp_path / 'config'), 'XDG_DATA_HOME': str(tmp_path / 'data')}
    with spawn(cmd, env=env, name='rerun-web', timeout=10) as viewer:
        def page():
            if viewer.poll() is not None:
                raise AssertionError(f'rerun exited {viewer.returncode}:\n{viewer.log_text()}')
            try:
                with urllib.request.urlopen(f'http://127.0.0.1:{web}/', timeout=2) as r:
                    return r.read().decode()
            except OSError:
                return None
        html = wait_for(page, 30, interval=0.2, what='the Rerun web viewer page')
        assert '<title>Rerun Viewer</title>' in html
        with urllib.request.urlopen(f'http://127.0.0.1:{web}/re_viewer_bg.wasm', timeout=10) as r:
            assert r.read(4) == b'\0asm'
        listening = [c.laddr for p in [psutil.Process(viewer.pid), *psutil.Process(
            viewer.pid).children(recursive=True)] for c in p.net_connections('inet')
            if c.status == psutil.CONN_LISTEN]
        assert {a.port for a in listening} >= {grpc, web}, listening
        assert all(ipaddress.ip_address(a.ip).is_loopback for a in listening), listening
        assert f'rerun+http://127.0.0.1:{grpc}/proxy' in viewer.log_text()
