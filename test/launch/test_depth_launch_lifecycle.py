"""depth.launch.py with autostart:=false and every parameter argument given, on the shipped config.

The installed config/depth.yaml goes through launch and rcl's parser unchanged; every parameter
argument reaches the node with its type; the node waits unconfigured and `ros2 lifecycle set`
configures and activates it (then it subscribes <camera>/<image_topic>/compressed as asked); Ctrl-C
ends everything with exit 0.
"""
import pytest
from launch_run import LaunchRun, assert_clean_ctrl_c, get_params, ros2, wait_state

from support.procs import wait_for
from support.rosutil import RosProbe

# one_distro: lifecycle services on Kilted: test/ros/depth; the CLI wheel is the same on both
pytestmark = [pytest.mark.ros, pytest.mark.one_distro, pytest.mark.timeout(240)]
NODE = '/camera/depth_node'           # the launch file's defaults


@pytest.fixture(scope='module')
def launched(launch_env, tiny_weights):
    probe = RosProbe('launch_lc_probe')
    args = {'model': 'da3metric-tiny', 'weights_path': tiny_weights['da3metric-tiny'],
            'backend': 'torch-cpu', 'device_id': '2', 'input_transport': 'compressed',
            'autostart': 'false', 'use_sim_time': 'false'}
    run = LaunchRun(launch_env, 'depth.launch.py', args, name='launch-depth-lc')
    try:
        yield run, probe
    finally:
        run.close()
        probe.close()


def test_every_parameter_argument_reaches_the_node(launched, tiny_weights):
    run, probe = launched
    wait_state(probe, NODE, 'unconfigured', run=run)
    got = get_params(probe, NODE, ['model', 'weights_path', 'backend', 'device_id',
                                   'input_transport', 'autostart', 'use_sim_time', 'sky_mode'])
    assert got == {'model': 'da3metric-tiny', 'weights_path': tiny_weights['da3metric-tiny'],
                   'backend': 'torch-cpu', 'device_id': 2, 'input_transport': 'compressed',
                   'autostart': False, 'use_sim_time': False,
                   'sky_mode': 'inf'}, run.log()     # the shipped config's quoted 'inf'


def test_ros2_lifecycle_set_configures_and_activates(launched, launch_env):
    run, probe = launched
    wait_state(probe, NODE, 'unconfigured', run=run)
    assert probe.node.count_subscribers('/camera/image_raw/compressed') == 0
    for transition, state in (('configure', 'inactive'), ('activate', 'active')):
        out = ros2(launch_env, 'lifecycle', 'set', '--no-daemon', '--spin-time', '3', NODE,
                   transition)
        assert 'Transitioning successful' in out, out + run.log()
        wait_state(probe, NODE, state, timeout=30, run=run)
    out = ros2(launch_env, 'lifecycle', 'get', '--no-daemon', '--spin-time', '3', NODE)
    assert out.startswith('active'), out
    wait_for(lambda: probe.node.count_subscribers('/camera/image_raw/compressed') >= 1, 20,
             what='the node subscribing /camera/image_raw/compressed')


def test_ctrl_c_ends_launch_and_node_with_exit_0(launched):
    run, _ = launched
    assert_clean_ctrl_c(run, nodes=1)
