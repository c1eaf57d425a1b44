"""The RViz2 configs and the Foxglove layout name only topics and frames the launched nodes have.

`ros2 launch tt_depth_ros depth.launch.py` and `pair.launch.py` run with their default arguments
(so the default namespaces and topic names), `rviz:=true` and a `config` copy that only swaps the
network for an engine double (the known-depth engine; the synthetic-scene DUSt3R engine with a
stereo baseline so the pose is metric and goes on /tf). The probe plays the cameras, stamping the
optical frames the configs use. RViz2 cannot be installed on these machines (no PyPI wheel;
Debian's `rviz` is the ROS 1 one), so the depth launch runs with no rviz2 on PATH (one log line,
the nodes run on) and the pair launch with a stand-in `rviz2` executable first on PATH that
records its arguments: launch must start it with `-d` and the installed pair.rviz, and keep it
running. Then, for rviz/depth.rviz, rviz/pair.rviz and foxglove/tt_depth_ros.json:

- every topic a display or panel names is in the graph with the type that display renders, with
  one of the launched nodes at the other end (its publisher, or its subscription for the camera
  inputs the displays also show);
- every enabled RViz display's output topic delivers messages in the config's fixed frame, and
  the pair node's /tf starts from that frame;
- every topic a Foxglove 3-D panel names is subscribed, and every visible one must deliver
  messages, all in the frame the panel follows (followTf). A hidden one (the pair panel's
  /dust3r/path, like pair.rviz's disabled Path display: published in temporal mode with
  publish_path only) must be in the graph with its type.
"""
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from launch_run import LaunchRun, config_with, wait_state
from nav_msgs.msg import Path as PathMsg
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from support.fake_engines.pair_scene import render_view
from support.procs import ROOT, wait_for
from support.rosutil import KNOWN_ENGINE, RELIABLE, TEST_DIR, RosProbe
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg

# one_distro: the topics the views read are the nodes', tested on Kilted in test/ros
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(240)]
SCENE_ENGINE = 'support.fake_engines.pair_scene:SceneDust3rEngine'
NODES = {'depth_node', 'pair_node'}
RVIZ_TYPES = {'rviz_default_plugins/Image': 'sensor_msgs/msg/Image',
              'rviz_default_plugins/PointCloud2': 'sensor_msgs/msg/PointCloud2',
              'rviz_default_plugins/Pose': 'geometry_msgs/msg/PoseStamped',
              'rviz_default_plugins/Path': 'nav_msgs/msg/Path'}
MSG_CLASSES = {'sensor_msgs/msg/Image': Image, 'sensor_msgs/msg/PointCloud2': PointCloud2,
               'geometry_msgs/msg/PoseStamped': PoseStamped, 'nav_msgs/msg/Path': PathMsg}
FOXGLOVE_3D_TYPES = {'sensor_msgs/msg/PointCloud2', 'geometry_msgs/msg/PoseStamped',
                     'nav_msgs/msg/Path'}
CAM_W, CAM_H = 160, 120
PAIR_W, PAIR_H = 112, 80    # network_size 112 maps these 1:1


def rviz_config(name: str) -> tuple[str, list[dict]]:
    """(Fixed Frame, [{class, name, enabled, topic, type}]) of rviz/<name>."""
    doc = yaml.safe_load((ROOT / 'rviz' / name).read_text())
    vm = doc['Visualization Manager']
    displays = []
    for d in vm['Displays']:
        topic = d.get('Topic', {}).get('Value') if isinstance(d.get('Topic'), dict) else None
        displays.append({'class': d['Class'], 'name': d['Name'], 'enabled': d['Enabled'],
                         'topic': topic, 'type': RVIZ_TYPES.get(d['Class']),
                         'frame': d.get('Reference Frame')})
    return vm['Global Options']['Fixed Frame'], displays


def foxglove_layout() -> list[tuple[str, set[str], str | None, bool]]:
    """[(topic, allowed types, frame the panel follows, visible)] of foxglove/tt_depth_ros.json."""
    doc = json.loads((ROOT / 'foxglove/tt_depth_ros.json').read_text())
    named = []
    for panel, cfg in doc['configById'].items():
        kind = panel.split('!')[0]
        if kind == 'Image':
            mode = cfg['imageMode']
            named.append((mode['imageTopic'], {'sensor_msgs/msg/Image',
                                               'sensor_msgs/msg/CompressedImage'}, None, True))
            if 'calibrationTopic' in mode:
                named.append((mode['calibrationTopic'], {'sensor_msgs/msg/CameraInfo'}, None,
                              True))
        elif kind == '3D':
            named += [(t, FOXGLOVE_3D_TYPES, cfg['followTf'], bool(c.get('visible', True)))
                      for t, c in cfg['topics'].items()]
        elif kind == 'DiagnosticSummary':
            named.append((cfg['topicToRender'], {'diagnostic_msgs/msg/DiagnosticArray'}, None,
                          True))
        else:
            raise AssertionError(f'{panel}: a panel kind this test does not know')
    return named


def _with_engine(src_name: str, dst, plugin: str, args: str, **values):
    """config/<src_name> with `values` replaced and the engine double appended."""
    path = config_with(ROOT / 'config' / src_name, dst, **values)
    path.write_text(path.read_text() + f"    engine_plugin: '{plugin}'\n"
                    f"    engine_plugin_args: '{args}'\n")
    return path


@pytest.fixture(scope='module')
def launched(launch_env, tmp_path_factory):
    """Both launch files with default arguments (config: engine doubles), and the probe."""
    folder = tmp_path_factory.mktemp('views')
    env = {**launch_env, 'PYTHONPATH': f'{TEST_DIR}:{launch_env.get("PYTHONPATH", "")}'}
    if shutil.which('rviz2', path=env.get('PATH')):
        pytest.fail('a real rviz2 is on PATH: this test expects none (its stand-in covers it)')
    fake_bin = folder / 'bin'
    fake_bin.mkdir()
    argv_file = folder / 'rviz2.argv'
    rviz2 = fake_bin / 'rviz2'
    rviz2.write_text('#!/bin/sh\n'       # records its argv (one per line), runs until signalled
                     f'printf "%s\\n" "$@" > {argv_file}\n'
                     "trap 'exit 0' INT TERM\n"
                     'while :; do sleep 0.2; done\n')
    rviz2.chmod(0o755)
    pair_env = {**env, 'PATH': f'{fake_bin}{os.pathsep}{env.get("PATH", "")}'}
    depth_cfg = _with_engine('depth.yaml', folder / 'depth.yaml', KNOWN_ENGINE,
                             '{"base": 2.0, "gx": 0.002}', diagnostics_period=0.2)
    pair_cfg = _with_engine('pair.yaml', folder / 'pair.yaml', SCENE_ENGINE,
                            '{"mode": "stereo"}', network_size=PAIR_W, scale_source='baseline',
                            baseline_m=0.12, diagnostics_period=0.2)
    probe = RosProbe('views_probe')
    runs = [LaunchRun(env, 'depth.launch.py', {'config': str(depth_cfg), 'rviz': 'true'},
                      name='views-depth'),
            LaunchRun(pair_env, 'pair.launch.py', {'config': str(pair_cfg), 'rviz': 'true'},
                      name='views-pair')]
    try:
        wait_state(probe, '/camera/depth_node', 'active', run=runs[0])
        wait_state(probe, '/dust3r/pair_node', 'active', run=runs[1])
        yield runs, probe, argv_file
    finally:
        for run in runs:
            run.close()
        probe.close()


def _endpoints(probe, topic: str) -> list:
    node = probe.node
    return [i for i in node.get_publishers_info_by_topic(topic)
            + node.get_subscriptions_info_by_topic(topic) if i.node_name in NODES]


def _assert_in_graph(probe, topic: str, allowed: set[str], where: str) -> None:
    def found():
        return [i for i in _endpoints(probe, topic) if i.topic_type in allowed]
    try:
        wait_for(found, 10, what=f'{topic}')
    except TimeoutError:
        got = {(i.node_name, i.topic_type) for i in _endpoints(probe, topic)}
        raise AssertionError(f'{where}: no launched node has {topic} as {sorted(allowed)} '
                             f'(it has {sorted(got)})') from None


def _feed(probe, stop_when) -> None:
    """Play both cameras until `stop_when()` is true (frames in the configs' fixed frames)."""
    cam = {t: probe.publisher(typ, f'/camera/{t}') for t, typ in
           (('image_raw', Image), ('camera_info', CameraInfo))}
    pair = {(c, t): probe.publisher(typ, f'/{c}/{t}') for c in ('left', 'right')
            for t, typ in (('image', Image), ('camera_info', CameraInfo))}
    for pub in list(cam.values()) + list(pair.values()):
        probe.wait_matched(pub)
    K = np.array([[150.0, 0, 79.5], [0, 150.0, 59.5], [0, 0, 1]])
    rgb = np.random.default_rng(5).integers(0, 256, (CAM_H, CAM_W, 3), dtype=np.uint8)
    deadline, sec = time.monotonic() + 60, 40
    while time.monotonic() < deadline and not stop_when():
        sec += 1
        header = Header(frame_id='camera_optical_frame')
        header.stamp.sec = sec
        cam['camera_info'].publish(camera_info_for(K, CAM_W, CAM_H, header))
        cam['image_raw'].publish(rgb_image_msg(rgb, header))
        for view, c in enumerate(('left', 'right')):
            img, _, Kp = render_view('stereo', sec % 8, view, PAIR_W, PAIR_H)
            h = Header(frame_id=f'{c}_optical_frame')
            h.stamp.sec = sec
            pair[(c, 'camera_info')].publish(camera_info_for(Kp, PAIR_W, PAIR_H, h))
            pair[(c, 'image')].publish(rgb_image_msg(img, h))
        time.sleep(0.4)


def test_every_display_topic_and_frame_is_there(launched):
    runs, probe, argv_file = launched
    configs = {name: rviz_config(name) for name in ('depth.rviz', 'pair.rviz')}
    outputs = {}      # enabled output topic -> fixed frame its messages must carry
    for name, (frame, displays) in configs.items():
        for d in displays:
            if d['frame'] is not None:
                assert d['frame'] == frame, f'{name}: {d["name"]} is drawn in {d["frame"]}'
            if d['type'] is None:
                assert d['topic'] is None, f'{name}: {d["class"]} is not checked by this test'
                continue
            _assert_in_graph(probe, d['topic'], {d['type']}, f'{name} "{d["name"]}"')
            ours = {i.node_name for i in probe.node.get_publishers_info_by_topic(d['topic'])}
            if d['enabled'] and ours & NODES:
                outputs[d['topic']] = (frame, d['type'])
    assert set(outputs) >= {'/camera/depth', '/camera/points', '/dust3r/points', '/dust3r/pose'}
    # the Foxglove 3-D panels: every topic named is subscribed; the visible ones must deliver
    followed = {}     # topic -> (frame the panel follows, visible)
    for topic, allowed, follow, visible in foxglove_layout():
        _assert_in_graph(probe, topic, allowed, 'foxglove/tt_depth_ros.json')
        if follow is not None:
            followed[topic] = (follow, visible)
    assert '/dust3r/path' in followed and any(v for _, v in followed.values())
    subscribed = {t: typ for t, (_, typ) in outputs.items()}
    for topic in followed:
        subscribed.setdefault(topic, next(i.topic_type for i in _endpoints(probe, topic)
                                          if i.topic_type in FOXGLOVE_3D_TYPES))
    for topic, typ in subscribed.items():
        probe.subscribe(MSG_CLASSES[typ], topic, RELIABLE)
    probe.subscribe(TFMessage, '/tf', RELIABLE)
    pair_frame = configs['pair.rviz'][0]
    must_arrive = set(outputs) | {t for t, (_, visible) in followed.items() if visible}

    def everything_arrived():
        tf_ok = any(t.header.frame_id == pair_frame for m in probe.got('/tf')
                    for t in m.transforms)
        return tf_ok and all(probe.got(t) for t in must_arrive)
    _feed(probe, everything_arrived)
    missing = sorted(t for t in must_arrive if not probe.got(t))
    assert not missing, f'no messages on {missing}\n' + '\n'.join(r.log() for r in runs)
    for topic, (frame, _) in outputs.items():
        assert {m.header.frame_id for m in probe.got(topic)} == {frame}, topic
    assert everything_arrived(), f'no /tf from {pair_frame}:\n{runs[1].log()}'
    for topic, (follow, visible) in followed.items():
        frames = {m.header.frame_id for m in probe.got(topic)}
        assert frames == {follow} if visible else frames <= {follow}, (topic, frames, follow)
    depth_log, pair_log = runs[0].log(), runs[1].log()
    assert depth_log.count('rviz2 is not on PATH') == 1, depth_log
    assert 'share/tt_depth_ros/rviz/depth.rviz' in depth_log, depth_log    # the installed config
    flag, config = argv_file.read_text().splitlines()
    assert flag == '-d' and config.endswith('share/tt_depth_ros/rviz/pair.rviz'), (flag, config)
    assert Path(config).read_bytes() == (ROOT / 'rviz/pair.rviz').read_bytes()
    assert 'rviz2 is not on PATH' not in pair_log, pair_log
    for log in (depth_log, pair_log):
        assert 'process has died' not in log, log       # rviz2 is still up, as are the nodes


def test_configs_are_installed(launch_env):
    shares = [Path(p) / 'share' / 'tt_depth_ros'
              for p in launch_env.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    share = next(s for s in shares if (s / 'package.xml').is_file())
    for rel in ('rviz/depth.rviz', 'rviz/pair.rviz', 'foxglove/tt_depth_ros.json'):
        assert (share / rel).read_bytes() == (ROOT / rel).read_bytes(), rel
