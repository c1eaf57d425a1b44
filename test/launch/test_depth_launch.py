"""`ros2 launch tt_depth_ros depth.launch.py` as a user runs it, after `colcon build`.

One launch run (autostart, a config file of the test, some arguments given): the node reaches
active; the config file's values hold where no argument is given and a given argument overrides
them (the scale source's too, its LiDAR topic remapped); a string choice the config quotes
('nan') stays a string through rcl; use_sim_time drives the node clock from /clock; depth and
points come out of the remapped topics; `ros2 param get` reads it; Ctrl-C to the process group
ends launch and the node with exit 0. `ros2 run` finds the package's tools.
"""
import re
import subprocess
import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from launch_run import LaunchRun, assert_clean_ctrl_c, config_with, get_params, ros2, wait_state
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header

from support.procs import ROOT, wait_for
from support.rosutil import RELIABLE, RosProbe
from tt_depth_ros.ros.msgs.camera_info import camera_info_for
from tt_depth_ros.ros.msgs.depth import rgb_image_msg

pytestmark = [pytest.mark.ros, pytest.mark.timeout(240)]
NS, NAME = '/la', 'depth_a'
NODE = f'{NS}/{NAME}'
W, H = 160, 120
K = np.array([[150.0, 0, 79.5], [0, 150.0, 59.5], [0, 0, 1]])
SIM_START = 5000        # /clock starts here (s): far from the wall clock


@pytest.fixture(scope='module')
def config(tmp_path_factory, tiny_weights):
    """config/depth.yaml with the tiny model, and values the arguments must (not) override."""
    return config_with(ROOT / 'config' / 'depth.yaml',
                       tmp_path_factory.mktemp('cfg') / 'depth_test.yaml',
                       model='da3metric-tiny', weights_path=tiny_weights['da3metric-tiny'],
                       backend='torch-cpu', input_transport='compressed', sky_mode='nan',
                       process_res=112, expected_width=W, expected_height=H,
                       diagnostics_period=0.2)


@pytest.fixture(scope='module')
def launched(launch_env, config):
    probe = RosProbe('launch_depth_probe')
    run = LaunchRun(launch_env, 'depth.launch.py', {
        'camera': NS, 'node_name': NAME, 'image_topic': 'cam/image', 'camera_info_topic':
        'cam/info', 'config': str(config), 'input_transport': 'raw', 'use_sim_time': 'true',
        'scale_source': 'cloud', 'scale_filter': 'kalman',
        'metric_cloud_topic': '/la_lidar/points'},
        name='launch-depth')
    try:
        yield run, probe
    finally:
        run.close()
        probe.close()


def test_node_reaches_active(launched):
    run, probe = launched
    wait_state(probe, NODE, 'active', run=run)


def test_config_values_hold_unless_given_on_the_command_line(launched, config, tiny_weights):
    run, probe = launched
    wait_state(probe, NODE, 'active', run=run)
    got = get_params(probe, NODE, ['model', 'weights_path', 'backend', 'input_transport',
                                   'sky_mode', 'process_res', 'autostart', 'use_sim_time',
                                   'scale_source', 'scale_filter'])
    assert got == {'model': 'da3metric-tiny', 'weights_path': tiny_weights['da3metric-tiny'],
                   'backend': 'torch-cpu',          # from the config file: no argument given
                   'input_transport': 'raw',        # the argument overrides the file's value
                   'sky_mode': 'nan',               # a quoted choice stays a string through rcl
                   'process_res': 112, 'autostart': True, 'use_sim_time': True,
                   'scale_source': 'cloud', 'scale_filter': 'kalman'}, run.log()
    # the LiDAR input is remapped where the argument says
    wait_for(lambda: probe.node.count_subscribers('/la_lidar/points') >= 1, 30,
             what='a subscriber on /la_lidar/points')


def test_outputs_arrive_on_the_remapped_topics(launched):
    run, probe = launched
    wait_state(probe, NODE, 'active', run=run)
    probe.subscribe(Image, f'{NS}/depth', RELIABLE)
    probe.subscribe(PointCloud2, f'{NS}/points', RELIABLE)
    img_pub = probe.publisher(Image, f'{NS}/cam/image')
    info_pub = probe.publisher(CameraInfo, f'{NS}/cam/info')
    probe.wait_matched(img_pub)
    probe.wait_matched(info_pub)
    rgb = np.random.default_rng(3).integers(0, 256, (H, W, 3), dtype=np.uint8)

    def arrived():
        header = Header(frame_id='la_optical')
        header.stamp.sec = 77
        info_pub.publish(camera_info_for(K, W, H, header))
        img_pub.publish(rgb_image_msg(rgb, header))
        time.sleep(0.2)
        return all(any(m.header.stamp.sec == 77 for m in probe.got(t))
                   for t in (f'{NS}/depth', f'{NS}/points'))

    wait_for(arrived, 60, what='depth and points for the published frame')
    depth = next(m for m in probe.got(f'{NS}/depth') if m.header.stamp.sec == 77)
    assert (depth.width, depth.height, depth.encoding) == (W, H, '32FC1')
    assert depth.header.frame_id == 'la_optical'


def test_use_sim_time_drives_the_node_clock(launched):
    run, probe = launched
    wait_state(probe, NODE, 'active', run=run)
    probe.subscribe(DiagnosticArray, '/diagnostics', RELIABLE)
    clock_pub = probe.publisher(Clock, '/clock')
    stop = threading.Event()

    def tick():
        t = SIM_START * 10
        while not stop.is_set():
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = t // 10, (t % 10) * 100_000_000
            clock_pub.publish(msg)
            t += 1
            time.sleep(0.02)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        # diagnostics are stamped with the node clock and timed by it: with use_sim_time they
        # carry /clock's time (never the wall clock) and come only while /clock advances
        def sim_stamped():
            return [m for m in probe.got('/diagnostics')
                    if any(s.name == NODE for s in m.status)
                    and SIM_START <= m.header.stamp.sec < SIM_START + 3600]
        wait_for(sim_stamped, 30, what='diagnostics stamped with /clock time')
    finally:
        stop.set()
        ticker.join(5)


def test_ros2_param_get_reads_the_launched_node(launched, launch_env):
    run, probe = launched
    wait_state(probe, NODE, 'active', run=run)
    out = ros2(launch_env, 'param', 'get', '--no-daemon', '--spin-time', '3', NODE, 'sky_mode')
    assert out.strip() == 'String value is: nan'


def test_ctrl_c_ends_launch_and_node_with_exit_0(launched):
    run, probe = launched
    wait_state(probe, NODE, 'active', run=run)
    assert_clean_ctrl_c(run, nodes=1)


def test_ros2_run_finds_the_tools(launch_env):
    out = ros2(launch_env, 'run', 'tt_depth_ros', 'tt-depth', '--help')
    assert out.startswith('usage: tt-depth')
    out = ros2(launch_env, 'pkg', 'executables', 'tt_depth_ros')
    scripts = set(re.findall(r"'([\w-]+) = tt_depth_ros\.", (ROOT / 'setup.py').read_text()))
    assert {'depth_node', 'pair_node', 'tt-depth', 'tt-depth-batch'} <= scripts
    assert {line.split()[1] for line in out.splitlines()} >= scripts


@pytest.mark.parametrize('launch_file, args, message', [
    ('depth.launch.py', ['device_id:=zero'], "device_id:='zero' is not of type int"),
    ('pair.launch.py', ['autostart:=maybe'], "autostart:='maybe' is not of type bool"),
    ('multi_camera.launch.py', ['cameras:=/a,/b', 'weights_path:=x,y,z'],
     "weights_path:='x,y,z' has 3 values for 2 cameras"),
])
def test_a_wrong_argument_stops_launch_naming_it(launch_env, launch_file, args, message):
    proc = subprocess.run(['ros2', 'launch', 'tt_depth_ros', launch_file, *args], env=launch_env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert 'process started' not in proc.stdout + proc.stderr     # no node was started
