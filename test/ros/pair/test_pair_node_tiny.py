"""Pair node end to end with the REAL DUSt3R engine (tiny config, rule-v1 weights) on torch-cpu.

Random weights give meaningless geometry, so these tests check the plumbing: topics, frames,
headers, shapes, layouts, labelling of scale-free depth — and that the published unscaled depth
equals what the same pipeline computes in-process for the same images.
"""
import numpy as np
import pytest
from pair_sim import TINY_ENGINE, PairProbe, pair_node_cmd, t_ns

from support.dust3r_data import pair_u8
from support.procs import spawn
from support.rosutil import child_env
from tt_depth_ros.ros.msgs.depth import image_msg_to_depth
from tt_depth_ros.tools.eval.scene_render import intrinsics

# one_distro: a real model in the pair node; its ROS surface runs on Kilted in the other
# pair node tests (engine doubles)
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(180)]
MS = 1_000_000
# Random weights: head-2 confidence is ~1, so accept every pixel and any PnP consensus.
LENIENT = dict(conf_threshold=1.0, pnp_min_inliers=4, pnp_min_inlier_ratio=0.0)


def test_stereo_tiny_model_topics_frames_shapes_headers():
    ns = '/pair_tiny_stereo'
    img1, img2 = pair_u8('80x112')
    K = intrinsics(112, 80)
    params = dict(mode='stereo', engine_plugin=TINY_ENGINE, network_size=112,
                  publish_unscaled_depth=True, publish_confidence=True, diagnostics_period=0.2,
                  expected_width=112, expected_height=80, publish_tf='always', **LENIENT)
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_tiny_st') as proc:
            probe.wait_ready(timeout=90)
            t = 42 * 1000 * MS + 5
            probe.publish_view(0, img1, K, t, 'cam1_optical')
            probe.publish_view(1, img2, K, t, 'cam2_optical')
            cloud = probe.wait_stamp('points', t, timeout=60)
            pose = probe.wait_stamp('pose', t)
            tf = probe.wait_stamp('/tf', t)
            unscaled = probe.wait_stamp('depth_unscaled', t)
            conf = probe.wait_stamp('confidence', t)
            assert cloud.header.frame_id == 'cam1_optical' and t_ns(cloud.header.stamp) == t
            assert [f.name for f in cloud.fields] == ['x', 'y', 'z', 'rgb']
            assert [f.offset for f in cloud.fields] == [0, 4, 8, 16] and cloud.point_step == 32
            assert cloud.height == 1 and 0 < cloud.width <= 2 * 80 * 112
            assert pose.header.frame_id == 'cam1_optical'
            assert tf.header.frame_id == 'cam1_optical'
            assert tf.child_frame_id == 'cam2_optical_dust3r_unscaled'
            q = pose.pose.orientation
            assert np.isclose(q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2, 1.0)
            assert unscaled.encoding == '32FC1' and (unscaled.height, unscaled.width) == (80, 112)
            assert unscaled.header.frame_id == 'cam1_optical'
            assert conf.encoding == '32FC1' and (conf.height, conf.width) == (80, 112)
            assert np.all(image_msg_to_depth(conf) >= 1.0)
            assert probe.out('depth') == []     # no metric scale -> never on 'depth'
            diag = probe.wait_diag(lambda v: v.get('pairs') == '1' and 'units' in v)
            assert diag['backend'] == 'torch-cpu' and 'dust3r' in diag['model']
            assert diag['units'] == 'dust3r-units' and diag['scale_source'] == 'none'
            assert proc.poll() is None, proc.log_text()
        # the same images through the same pipeline in this process
        from support.fake_engines.pair_scene import tiny_dust3r_engine
        from tt_depth_ros.pipelines.pair_dust3r import PairPipeline, PairSettings
        settings = PairSettings(network_size=112, conf_threshold=1.0, pnp_min_inliers=4,
                                pnp_min_inlier_ratio=0.0)
        expect = PairPipeline(tiny_dust3r_engine(), settings).run(img1, img2, K, K).depth1(1.0)
        got = image_msg_to_depth(unscaled)
        assert np.array_equal(np.isnan(got), np.isnan(expect))
        ok = ~np.isnan(expect)
        assert np.allclose(got[ok], expect[ok], rtol=1e-4, atol=1e-6)
    finally:
        probe.close()


def test_temporal_tiny_model_first_keyframe_then_pairs():
    ns = '/pair_tiny_temporal'
    img1, img2 = pair_u8('80x112')
    K = intrinsics(112, 80)
    params = dict(mode='temporal', engine_plugin=TINY_ENGINE, network_size=112,
                  keyframe_every_n=1, publish_path=True, diagnostics_period=0.2,
                  publish_tf='always', **LENIENT)
    probe = PairProbe(ns, 'temporal')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_tiny_tm') as proc:
            probe.wait_ready(timeout=90)
            stamps = [(7 + k) * 100 * MS for k in range(3)]
            for k, t in enumerate(stamps):
                probe.publish_view(0, (img1, img2)[k % 2], K, t, 'mono_optical')
                pose = probe.wait_stamp('pose', t, timeout=60)
                assert pose.header.frame_id == 'dust3r_odom'
                tf = probe.wait_stamp('/tf', t)
                assert (tf.header.frame_id, tf.child_frame_id) == ('dust3r_odom',
                                                                   'mono_optical_dust3r_unscaled')
                if k == 0:   # the first keyframe defines the odom origin
                    p = pose.pose.position
                    assert (p.x, p.y, p.z) == (0.0, 0.0, 0.0) and pose.pose.orientation.w == 1.0
                else:
                    cloud = probe.wait_stamp('points', t)
                    assert cloud.header.frame_id == 'mono_optical' and cloud.width > 0
            path = probe.wait_stamp('path', stamps[-1])
            assert [t_ns(p.header.stamp) for p in path.poses] == stamps
            diag = probe.wait_diag(lambda v: v.get('keyframes') == '3')
            assert diag['mode'] == 'temporal'
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()
