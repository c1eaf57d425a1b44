"""Every ROS process the tests start discovers over loopback only (NETWORK SAFETY).

The harness (test/conftest.py) sets it; the nodes never do (test/ros/runtime/test_runtime_env.py).
The profile is found through the ament index (an installed package's share directory), else in the
source checkout; never from VIRTUAL_ENV guesses.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tt_depth_ros.ros.runtime.process.loopback import loopback_profile_path

pytestmark = pytest.mark.ros  # also checked under Kilted (its rclpy probe especially)

KEYS = ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE',
        'FASTRTPS_DEFAULT_PROFILES_FILE', 'ROS_DOMAIN_ID', 'RMW_IMPLEMENTATION')
NS = {'d': 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'}


def _check(env):
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'] == env['FASTRTPS_DEFAULT_PROFILES_FILE']
    assert os.path.samefile(env['FASTDDS_DEFAULT_PROFILES_FILE'], loopback_profile_path())
    assert 0 <= int(env['ROS_DOMAIN_ID']) <= 101
    assert env['RMW_IMPLEMENTATION'] == 'rmw_fastrtps_cpp'
    assert env.get('ROS_LOCALHOST_ONLY') is None


def test_settings_in_force_in_this_process():
    _check(os.environ)


def test_settings_inherited_by_children_and_grandchildren():
    code = ('import json,os,subprocess,sys;'
            'print(json.dumps({k: os.environ.get(k) for k in %r}));'
            'sys.stdout.flush();'
            'subprocess.run([sys.executable, "-c", "import json,os;'
            'print(json.dumps({k: os.environ.get(k) for k in %r}))"])' % (KEYS, KEYS))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.splitlines()
    assert len(out) == 2
    for line in out:
        child = json.loads(line)
        _check({k: v for k, v in child.items() if v is not None})
        assert child['ROS_DOMAIN_ID'] == os.environ['ROS_DOMAIN_ID']


def test_profile_is_loopback_only_with_large_shared_memory():
    root = ET.parse(loopback_profile_path()).getroot()
    descriptors = {d.findtext('d:transport_id', namespaces=NS): d
                   for d in root.iterfind('.//d:transport_descriptor', NS)}
    kinds = {tid: d.findtext('d:type', namespaces=NS) for tid, d in descriptors.items()}
    assert sorted(kinds.values()) == ['SHM', 'UDPv4']
    for tid, d in descriptors.items():
        if kinds[tid] == 'UDPv4':
            addresses = [a.text for a in d.iterfind('.//d:address', NS)]
            assert addresses == ['127.0.0.1']
        else:  # a 4K rgb8 image is ~25 MB; a multi-megabyte cloud must fit one segment
            assert int(d.findtext('d:segment_size', namespaces=NS)) >= 32 * 1024 * 1024
    participant = root.find('.//d:participant', NS)
    assert participant.get('is_default_profile') == 'true'
    assert participant.findtext('.//d:useBuiltinTransports', namespaces=NS) == 'false'
    used = [t.text for t in participant.iterfind('.//d:userTransports/d:transport_id', NS)]
    assert sorted(used) == sorted(descriptors)


def test_rclpy_participant_starts_under_the_profile():
    """A real rclpy context initialises with these settings (the profile parses)."""
    code = ('import rclpy; rclpy.init(); n = rclpy.create_node("loopback_probe"); '
            'print(n.get_name()); n.destroy_node(); rclpy.shutdown()')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert 'loopback_probe' in proc.stdout
    assert 'Error' not in proc.stderr, proc.stderr


def _profile_found_with(env_update: dict, unset=()) -> str:
    env = dict(os.environ, **env_update)
    for key in unset:
        env.pop(key, None)
    code = ('from tt_depth_ros.ros.runtime.process.loopback import loopback_profile_path; '
            'print(loopback_profile_path())')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                          timeout=60, cwd='/')
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_profile_comes_from_the_ament_share_directory_when_installed(tmp_path):
    prefix = tmp_path / 'install'
    (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages').mkdir(parents=True)
    (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / 'tt_depth_ros').touch()
    (prefix / 'share' / 'tt_depth_ros' / 'config').mkdir(parents=True)
    installed = prefix / 'share' / 'tt_depth_ros' / 'config' / 'fastdds_loopback.xml'
    installed.write_text(loopback_profile_path().read_text())
    other = tmp_path / 'other_overlay'          # first on the path, without this package
    (other / 'share' / 'ament_index' / 'resource_index' / 'packages').mkdir(parents=True)
    found = _profile_found_with({'AMENT_PREFIX_PATH': f'{other}:{prefix}',
                                 'VIRTUAL_ENV': str(tmp_path / 'not-a-venv')})
    assert found == str(installed)


def test_profile_falls_back_to_the_source_checkout(tmp_path):
    checkout = Path(__file__).resolve().parents[3] / 'config' / 'fastdds_loopback.xml'
    assert _profile_found_with({'VIRTUAL_ENV': str(tmp_path)}, unset=('AMENT_PREFIX_PATH',)) \
        == str(checkout)
    assert _profile_found_with({'AMENT_PREFIX_PATH': str(tmp_path)}) == str(checkout)
