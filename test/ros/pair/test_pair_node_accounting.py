"""Stereo pair node: every pair reaches `points` or is accounted for in /diagnostics.

Regression for a benchmark (tiny DUSt3R, random weights, sample bag replayed at 1-2 Hz) where 13 of
19 pairs reached `points` with no mailbox drop: (1) a pair with no confident point made the cloud
message builder raise (a worker error, no cloud); (2) with input history depth 1, a camera that
published twice before the executor took the first image (tools/bag/replay.Player sends frame k+1's
right image right after frame k's left one) lost that image inside the middleware, uncounted, and
its partner was dropped as unpaired; (3) a pose-only PnP failure was counted as a skipped frame
although its cloud was published. The node runs in its own process; the engine is the scene
double (exact pointmaps; frame id 1 gets a garbage view-2 pointmap, so PnP fails there).
"""
import json

import pytest
from pair_sim import SCENE_ENGINE, H, PairProbe, W, pair_node_cmd, stamp, t_ns
from std_msgs.msg import Header

from support.fake_engines.pair_scene import render_view
from support.rosutil import child_env
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg

pytestmark = [pytest.mark.ros, pytest.mark.timeout(150)]
MS = 1_000_000


def test_every_stereo_pair_is_published_or_accounted_for():
    ns = '/pair_acct'
    params = dict(mode='stereo', engine_plugin=SCENE_ENGINE, network_size=112,
                  engine_plugin_args=json.dumps({'mode': 'stereo', 'garbage_ids': [1]}),
                  diagnostics_period=0.2, bad_input_log_period=0.0,
                  camera_info_sync='latest')   # one CameraInfo (stamp 1) per camera
    probe = PairProbe(ns, 'stereo')
    try:
        with spawn_node(ns, params) as proc:
            probe.wait_ready()
            views = [render_view('stereo', k % 4, cam, W, H) for k in range(9) for cam in (0, 1)]
            K = views[0][2]
            for cam in (0, 1):
                probe.info_pubs[cam].publish(camera_info_for(K, W, H, Header(stamp=stamp(1))))
            probe.wait_diag(lambda v: v.get('state') == 'active')

            def t(k):
                return (60 + k) * 100 * MS

            def send(k, cam):   # image only, no pause: the replay's back-to-back pattern
                header = Header(stamp=stamp(t(k)), frame_id=('left', 'right')[cam])
                probe.img_pubs[cam].publish(rgb_image_msg(views[2 * k + cam][0], header))

            clouds = {}
            for k in range(0, 8, 2):
                send(k, 1)
                send(k, 0)
                send(k + 1, 1)          # camera 2 twice before its pair partner
                clouds[k] = probe.wait_stamp('points', t(k))
                send(k + 1, 0)
                clouds[k + 1] = probe.wait_stamp('points', t(k + 1))
            # 8 pairs, ids k % 4; id 1 (k = 1, 5): PnP fails, the cloud is still published
            assert all(c.width > 0 for c in clouds.values())
            for k in (0, 2, 3, 4, 6, 7):
                probe.wait_stamp('pose', t(k))
            # no confident point at all: an empty cloud, no pose, no worker error
            res = probe.set_params(f'{ns}/pair_node', {'conf_threshold': 100.0})
            assert res[0].successful, res[0].reason
            send(8, 1)
            send(8, 0)
            empty = probe.wait_stamp('points', t(8))
            assert (empty.height, empty.width, len(empty.data)) == (1, 0, 0)
            d = probe.wait_diag(lambda v: v.get('published') == '9')
            assert d['pairs'] == '9' and d['errors'] == '0', d
            assert d['received_camera1'] == d['received_camera2'] == '9', d
            assert d['unpaired_camera1'] == d['unpaired_camera2'] == '0', d
            assert d['dropped_mailbox'] == '0' and int(d['input_history_depth']) >= 5, d
            assert d['pnp_failures'] == '3' and d['pnp_ok'] == '6', d
            assert 'rejected_pnp' not in d and d['rejected_total'] == '0', d
            posed = {t_ns(m.header.stamp) for m in probe.out('pose')}
            assert posed == {t(k) for k in (0, 2, 3, 4, 6, 7)}
            assert proc.poll() is None, proc.log_text()
            assert 'no pose/TF for this pair (cloud still published)' in proc.log_text()
    finally:
        probe.close()


def spawn_node(ns: str, params: dict):
    from support.procs import spawn
    return spawn(pair_node_cmd(ns, params), env=child_env(), name='pair_acct')
