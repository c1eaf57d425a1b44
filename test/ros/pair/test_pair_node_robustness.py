"""Pair node lifecycle (driven through its services from another process), bad input, overload.

Same machinery as the depth node (shared PerceptionLifecycleNode base); the engine is the scene
double so every good pair has a known, checkable pose.
"""
import json
import time

import psutil
import pytest
from pair_sim import SCENE_ENGINE, H, PairProbe, W, pair_node_cmd, stamp
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from support.fake_engines.pair_scene import render_view
from support.procs import spawn, wait_for
from support.rosutil import child_env

pytestmark = [pytest.mark.ros, pytest.mark.timeout(240)]
MS = 1_000_000


def scene_params(**kw):
    p = dict(mode='stereo', engine_plugin=SCENE_ENGINE, engine_plugin_args='{"mode": "stereo"}',
             network_size=112, diagnostics_period=0.2, bad_input_log_period=0.0)
    p.update(kw)
    return p


def test_lifecycle_cycles_gate_outputs_and_recover_from_errors():
    ns = '/pair_life'
    node = f'{ns}/pair_node'
    args = json.dumps({'mode': 'stereo', 'fail_prepare': 1})
    params = scene_params(autostart=False, engine_plugin_args=args, expected_width=W,
                          expected_height=H)
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_life') as proc:
            wait_for(lambda: probe._state(node) == 'unconfigured', 60, what='node up')
            # the injected prepare failure: configure fails, node back in unconfigured
            assert probe.change_state(node, 'configure') is False
            assert probe.get_state(node) == 'unconfigured'
            t = 1000 * MS
            fds = threads = None
            for cycle in range(5):
                assert probe.change_state(node, 'configure') is True
                assert probe.get_state(node) == 'inactive'
                probe.publish_stereo(0, t)          # inactive: nothing may come out
                t += 1000 * MS
                assert probe.change_state(node, 'activate') is True
                for p in probe.img_pubs:
                    probe.wait_matched(p)
                probe.publish_stereo(1, t)
                probe.wait_stamp('pose', t)
                t += 1000 * MS
                assert probe.change_state(node, 'deactivate') is True
                probe.publish_stereo(2, t)
                t += 1000 * MS
                assert probe.change_state(node, 'cleanup') is True
                assert probe.get_state(node) == 'unconfigured'
                ps = psutil.Process(proc.pid)
                if cycle == 0:
                    fds, threads = ps.num_fds(), ps.num_threads()
            assert ps.num_threads() <= threads and ps.num_fds() <= fds + 2
            stamps = sorted(m.header.stamp.sec for m in probe.out('pose'))
            assert stamps == [2 + 3 * c for c in range(5)]   # only while active
            # invalid parameter combination: configure FAILURE naming it, then fixed
            res = probe.set_params(node, {'scale_source': 'baseline'})
            assert res[0].successful
            assert probe.change_state(node, 'configure') is False
            assert 'baseline_m' in proc.log_text()
            assert probe.set_params(node, {'baseline_m': 0.12})[0].successful
            # a DUSt3R engine has no camera decoder: configure FAILURE naming it
            assert probe.set_params(node, {'pose_source': 'camera_decoder'})[0].successful
            assert probe.change_state(node, 'configure') is False
            assert "pose_source='camera_decoder' needs a DA3 any-view engine" in proc.log_text()
            assert probe.set_params(node, {'pose_source': 'pnp'})[0].successful
            assert probe.change_state(node, 'configure') is True
            # configure-time parameters are refused while configured
            res = probe.set_params(node, {'mode': 'temporal'})
            assert not res[0].successful and 'clean up' in res[0].reason
            assert probe.change_state(node, 'activate') is True
            assert probe.change_state(node, 'active_shutdown') is True
            assert probe.get_state(node) == 'finalized'
            assert proc.poll() is None or proc.returncode == 0
    finally:
        probe.close()


def bad_image(rgb, t, frame, encoding='rgb8', step=None, data=None):
    h, w = rgb.shape[:2]
    msg = Image(header=Header(stamp=stamp(t), frame_id=frame), height=h, width=w,
                encoding=encoding, step=step if step is not None else w * 3)
    msg.data = data if data is not None else rgb.tobytes()
    return msg


def test_bad_input_is_skipped_counted_and_the_next_good_pair_is_processed():
    ns = '/pair_bad'
    args = json.dumps({'mode': 'stereo', 'garbage_ids': [5]})
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, scene_params(engine_plugin_args=args)), env=child_env(),
                   name='pair_bad') as proc:
            probe.wait_ready()
            r1, _, K = render_view('stereo', 0, 0, W, H)
            r2, _, _ = render_view('stereo', 0, 1, W, H)

            def good(t, k=0):
                probe.publish_stereo(k, t)
                return probe.wait_stamp('pose', t)

            def diag_has(key, n=1):
                return probe.wait_diag(lambda v: int(v.get(key, 0)) >= n)

            # 1. no CameraInfo yet (camera_info_mode=wait)
            probe.publish_view(0, r1, K, 10 * 1000 * MS, 'left', info=False)
            probe.publish_view(1, r2, K, 10 * 1000 * MS, 'right', info=False)
            diag_has('rejected_no_camera_info')
            good(11 * 1000 * MS)
            # 2. unsupported encoding, 3. data size != step * height
            t = 12 * 1000 * MS
            probe.publish_view(0, r1, K, t, 'left', encoding_msg=bad_image(r1, t, 'left', '64FC3'))
            diag_has('rejected_encoding')
            t = 13 * 1000 * MS
            probe.publish_view(0, r1, K, t, 'left',
                               encoding_msg=bad_image(r1, t, 'left', data=r1.tobytes()[:-7]))
            diag_has('rejected_data_size')
            good(14 * 1000 * MS)
            # 4. invalid CameraInfo (fx = 0) for camera 2
            bad_K = K.copy()
            bad_K[0, 0] = 0.0
            t = 15 * 1000 * MS
            probe.publish_view(0, r1, K, t, 'left')
            probe.publish_view(1, r2, bad_K, t, 'right')
            diag_has('rejected_camera_info_invalid')
            good(16 * 1000 * MS)
            # 5. PnP failure: no pose and no TF for that pair, reason reported
            t = 17 * 1000 * MS
            r1b, _, _ = render_view('stereo', 5, 0, W, H)
            r2b, _, _ = render_view('stereo', 5, 1, W, H)
            probe.publish_view(0, r1b, K, t, 'left')
            probe.publish_view(1, r2b, K, t, 'right')
            d = diag_has('pnp_failures')
            assert d['last_pnp_failure']
            good(18 * 1000 * MS, k=1)
            stamps = {m.header.stamp.sec for m in probe.out('pose')}
            tf_stamps = {tr.header.stamp.sec for m in probe.out('/tf') for tr in m.transforms}
            assert 17 not in stamps and 17 not in tf_stamps
            # 6. one camera silent: camera-1 frames pile up unpaired, nothing is published
            for k in range(8):
                probe.publish_view(0, r1, K, (19 * 1000 + k * 50) * MS, 'left')
            d = diag_has('unpaired_camera1', 3)
            n_pose = len(probe.out('pose'))
            # 7. stamps going backwards (bag loop): that frame is skipped and counted, the
            #    pairer resets, and pairing resumes on the new timeline
            t = 2 * 1000 * MS
            probe.publish_stereo(0, t)
            d = diag_has('rejected_stamp_backwards', 2)
            good(t + 1000 * MS, k=2)
            good(t + 2000 * MS, k=3)
            d = diag_has('pairing_resets')
            assert len(probe.out('pose')) == n_pose + 2
            assert proc.poll() is None, proc.log_text()
            assert 'frame skipped [encoding]' in proc.log_text()
    finally:
        probe.close()


def test_overload_latest_pair_wins_drops_counted():
    ns = '/pair_load'
    # 1 s per pair: the 40 pairs must outrun it even when a loaded machine stretches the
    # publishing loop several-fold (at 0.25 s a 6x stretch under load let it keep up)
    args = json.dumps({'mode': 'stereo', 'delay_s': 1.0})
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn(pair_node_cmd(ns, scene_params(engine_plugin_args=args)), env=child_env(),
                   name='pair_load') as proc:
            probe.wait_ready()
            n = 40
            for k in range(n):                     # 25 Hz against a 1 Hz engine
                probe.publish_stereo(k % 4, (100 + k) * 40 * MS)
                time.sleep(0.04)
            last = (100 + n - 1) * 40 * MS
            probe.wait_stamp('pose', last, timeout=30)   # the newest pair is always processed
            published = len(probe.out('pose'))
            assert published < n
            d = probe.wait_diag(lambda v: int(v.get('dropped_mailbox', 0)) > 0
                                and int(v.get('pairs', 0)) >= n - 2)
            assert int(d['dropped_mailbox']) + published >= int(d['pairs']) - 1
            assert proc.poll() is None, proc.log_text()
    finally:
        probe.close()
