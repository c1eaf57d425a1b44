"""One depth node, three cameras, one engine: every output equals a single-camera node's bytes.

All nodes run in this process on real ROS (DDS, loopback): a depth node with `cameras` = three
cameras (two sizes; rgb8, bgr8 and compressed PNG input; each its own intrinsics and frame) and,
for each camera, a single-camera depth node (`cameras` empty) in a namespace of its own, all on the
tiny DA3 model (torch-cpu, float32). Each frame goes to both; depth, depth/camera_info and points
(xyzrgb: the decoded colours too) must be equal field by field, their data byte for byte, and
every camera's outputs carry its own frame only. Then the node's per-camera diagnostics, and a
cleanup that closes the one engine it built. Cameras whose sizes need more prepared shapes than
the engine keeps fail configure with a message naming them. A relative (any-view) model scales
each camera by its own metric image (per-camera scale inputs and figures).
"""
import cv2
import numpy as np
import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2
from std_msgs.msg import Header

from support.da3_fixtures import tiny_state_dict, write_safetensors
from support.procs import wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, RosProbe
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg
from tt_depth_ros.ros.runtime.diagnostics import status_values

pytestmark = pytest.mark.ros
OK = TransitionCallbackReturn.SUCCESS
# camera namespace -> (width, height, input encoding / transport, fx)
CAMERAS = {'/mc/a': (160, 120, 'rgb8', 150.0), '/mc/b': (160, 120, 'bgr8', 170.0),
           '/mc/c': (128, 96, 'compressed', 120.0)}
OUTPUTS = {'depth': Image, 'depth/camera_info': CameraInfo, 'points': PointCloud2}
FRAMES = 2


def _overrides(**values):
    return [Parameter(k, value=v) for k, v in values.items()]


def _entry(ns, w, h, enc):
    fields = f'image={ns}/image,camera_info={ns}/camera_info,size={w}x{h}'
    return fields + (',transport=compressed' if enc == 'compressed' else '')


def _image_msg(rgb, header, enc):
    if enc == 'compressed':
        ok, png = cv2.imencode('.png', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        assert ok
        return CompressedImage(header=header, format='rgb8; png compressed bgr8',
                               data=png.tobytes())
    msg = rgb_image_msg(rgb if enc == 'rgb8' else np.ascontiguousarray(rgb[..., ::-1]), header)
    msg.encoding = enc
    return msg


def _wait_outputs(probe, nodes, n):
    def all_out():
        return all(len(probe.got(f'{p}{ns}/{rel}')) >= n for ns in CAMERAS
                   for p in ('', '/ref') for rel in OUTPUTS)
    try:
        wait_for(all_out, 60, what=f'output {n} of every camera from both nodes')
    except TimeoutError as exc:
        counts = {f'{p}{ns}/{rel}': len(probe.got(f'{p}{ns}/{rel}')) for ns in CAMERAS
                  for p in ('', '/ref') for rel in OUTPUTS}
        stats = {node.get_namespace(): node.stats.snapshot() for node in nodes}
        raise AssertionError(f'{exc}: {counts} {stats}') from None


def test_three_cameras_equal_single_camera_nodes(tmp_path):
    from tt_depth_ros.ros.depth.node import DepthNode
    weights = write_safetensors(tiny_state_dict(), tmp_path / 'da3metric_tiny.safetensors')
    common = dict(model='da3metric-tiny', weights_path=str(weights), backend='torch-cpu',
                  torch_dtype='float32', process_res=112, points_format='xyzrgb',
                  input_reliability='reliable', camera_info_wait_s=2.0, autostart=False)
    probe = RosProbe('mc_probe')
    nodes = []
    try:
        multi = DepthNode('depth_node', namespace='/mc', context=probe.ctx,
                          parameter_overrides=_overrides(**common, cameras=[
                              _entry(ns, w, h, enc) for ns, (w, h, enc, _) in CAMERAS.items()]))
        refs = {ns: DepthNode('depth_node', namespace=f'/ref{ns}', context=probe.ctx,
                              parameter_overrides=_overrides(
                                  **common, expected_width=w, expected_height=h,
                                  input_transport='compressed' if enc == 'compressed' else 'raw'))
                for ns, (w, h, enc, _) in CAMERAS.items()}
        nodes = [multi, *refs.values()]
        builds = []
        real_build = multi.build_engine
        multi.build_engine = lambda: builds.append(1) or real_build()
        for node in nodes:
            probe.executor.add_node(node)
            assert node.trigger_configure() == OK, node.stats.last_error
            assert node.trigger_activate() == OK, node.stats.last_error
        assert builds == [1] and len(multi.cameras) == 3
        assert multi.engine.info.details['torch']    # one torch engine for the three cameras
        pubs = {}
        for ns, (_, _, enc, _) in CAMERAS.items():
            for prefix in (ns, f'/ref{ns}'):
                for rel, cls in OUTPUTS.items():
                    probe.subscribe(cls, f'{prefix}/{rel}', RELIABLE)
                img_cls, img_topic = ((CompressedImage, f'{prefix}/image/compressed')
                                      if enc == 'compressed' else (Image, f'{prefix}/image'))
                pubs[prefix] = (probe.publisher(img_cls, img_topic),
                                probe.publisher(CameraInfo, f'{prefix}/camera_info'))
                for pub in pubs[prefix]:
                    probe.wait_matched(pub)
        rng = np.random.default_rng(7)
        for k in range(FRAMES):
            for i, (ns, (w, h, enc, fx)) in enumerate(CAMERAS.items()):
                rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
                header = Header(frame_id=f'{ns[4:]}_optical')
                header.stamp.sec, header.stamp.nanosec = 50 + k, i
                K = np.array([[fx, 0, (w - 1) / 2], [0, fx * 1.01, (h - 1) / 2], [0, 0, 1]])
                for prefix in (ns, f'/ref{ns}'):
                    pubs[prefix][1].publish(camera_info_for(K, w, h, header))
                    pubs[prefix][0].publish(_image_msg(rgb, header, enc))
            _wait_outputs(probe, nodes, k + 1)   # then the next frame: none is replaced unseen
        for ns, (w, h, _, _) in CAMERAS.items():
            for rel in OUTPUTS:
                got = probe.got(f'{ns}/{rel}')
                want = probe.got(f'/ref{ns}/{rel}')
                assert len(got) == len(want) == FRAMES, (ns, rel)
                # only this camera's frames, in order, each equal to the single camera's bytes
                assert [m.header.frame_id for m in got] == [f'{ns[4:]}_optical'] * FRAMES
                assert [m.header.stamp.sec for m in got] == list(range(50, 50 + FRAMES))
                for g, r in zip(got, want):
                    # every field (CDR padding bytes are not part of a message)
                    assert g == r, (ns, rel)
                    if hasattr(g, 'data'):
                        assert bytes(g.data) == bytes(r.data), (ns, rel)
            assert (got[0].height, got[0].width) == (h, w)
        depth_a, depth_b = (probe.got(f'/mc/{c}/depth')[0] for c in 'ab')
        assert bytes(depth_a.data) != bytes(depth_b.data)   # the cameras' frames do differ
        statuses = {s.name: status_values(s) for s in multi.diagnostics_statuses('active')}
        for ns in CAMERAS:
            values = statuses[f'/mc/depth_node: {ns}']
            assert (values['camera'], values['published'], values['frames_taken']) == \
                (ns, str(FRAMES), str(FRAMES)), values
        engine = multi.engine
        assert multi.trigger_deactivate() == OK and multi.trigger_cleanup() == OK
        assert multi.engine is None
        with pytest.raises(RuntimeError, match='closed'):
            engine.infer(np.zeros((112, 154, 3), np.uint8))
    finally:
        for node in nodes:
            probe.executor.remove_node(node)
            node.destroy_node()
        probe.close()


def test_more_shapes_than_the_engine_keeps_fail_configure():
    from tt_depth_ros.ros.depth.node import DepthNode
    probe = RosProbe('mc_shapes_probe')
    node = DepthNode('depth_node', namespace='/mcs', context=probe.ctx, parameter_overrides=[
        Parameter('engine_plugin', value=KNOWN_ENGINE),
        Parameter('engine_plugin_args', value='{"max_prepared": 1}'),
        Parameter('autostart', value=False),
        Parameter('cameras', value=['image=/mcs/a/image,camera_info=/mcs/a/info,size=64x48',
                                    'image=/mcs/b/image,camera_info=/mcs/b/info,size=96x48'])])
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert 'need 2 prepared shapes' in node.stats.last_error
        assert '/mcs/a 64x48' in node.stats.last_error and node.engine is None
    finally:
        node.destroy_node()
        probe.close()


def test_relative_cameras_keep_their_own_scale():
    """Any-view (relative) kind, scale_source depth: each camera scales by its own metric image."""
    from support.fake_engines.known_anyview import scene
    from tt_depth_ros.ros.depth.node import DepthNode
    from tt_depth_ros.ros.msgs.depth import depth_image_msg, image_msg_to_depth
    nh, nw = 168, 224
    z, _ = scene(nh, nw, 1.5, 12.0, 0.8)
    args = '{"kind": "anyview", "height": 1.5, "wall_z": 12.0, "focal_frac": 0.8, "rel_scale": 4.0}'
    cams = {'/rs/a': 2.0, '/rs/b': 3.0}      # camera -> its metric image's factor on the scene
    probe = RosProbe('mc_rel_probe')
    params = _overrides(engine_plugin='support.fake_engines.known_anyview:KnownAnyviewEngine',
                        engine_plugin_args=args, process_res=224, output_resolution='network',
                        input_reliability='reliable', scale_source='depth', autostart=False,
                        cameras=list(cams))
    node = DepthNode('depth_node', namespace='/rs', context=probe.ctx, parameter_overrides=params)
    try:
        probe.executor.add_node(node)
        assert node.trigger_configure() == OK and node.trigger_activate() == OK
        pubs = {}
        for cam in cams:
            probe.subscribe(Image, f'{cam}/depth', RELIABLE)
            pubs[cam] = (probe.publisher(Image, f'{cam}/image'),
                         probe.publisher(Image, f'{cam}/metric_depth'))
            for pub in pubs[cam]:
                probe.wait_matched(pub)
        for cam, factor in cams.items():
            header = Header(frame_id=f'{cam[4:]}_optical')
            header.stamp.sec = 7
            pubs[cam][1].publish(depth_image_msg(z * np.float32(factor), header))
            pubs[cam][0].publish(rgb_image_msg(np.full((240, 320, 3), 90, np.uint8), header))
        wait_for(lambda: all(probe.got(f'{cam}/depth') for cam in cams), 30,
                 what='metric depth of both cameras')
        for cam, factor in cams.items():
            np.testing.assert_allclose(image_msg_to_depth(probe.got(f'{cam}/depth')[0]),
                                       z * factor, rtol=1e-5, err_msg=cam)
        figures = {s.name: status_values(s) for s in node.diagnostics_statuses('active')}
        for cam, factor in cams.items():
            assert abs(float(figures[f'/rs/depth_node: {cam}']['scale']) - 4.0 * factor) < 1e-4
    finally:
        probe.executor.remove_node(node)
        node.destroy_node()
        probe.close()
