"""The rviz:= launch argument: nothing, rviz2 with its config, or one line without rviz2."""
import pytest

pytest.importorskip('launch', reason='the launch system is optional (scripts/bootstrap.sh '
                    'installs it from ../shared/ros/launch; test/launch/ runs it for real)')

from launch.actions import ExecuteProcess, LogInfo  # noqa: E402

from tt_depth_ros.ros.runtime.process.rviz_launch import rviz_actions, rviz_config_path  # noqa: E402


def test_false_starts_nothing_and_a_bad_value_is_named():
    assert rviz_actions('false', 'depth.rviz') == []
    with pytest.raises(ValueError, match="rviz:='maybe' must be true or false"):
        rviz_actions('maybe', 'depth.rviz')


def test_without_rviz2_one_log_line(monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    (action,) = rviz_actions('true', 'pair.rviz')
    assert isinstance(action, LogInfo)
    text = ''.join(getattr(s, 'text', str(s)) for s in action.msg)
    assert 'rviz2 is not on PATH' in text and 'pair.rviz' in text and 'nodes run on' in text


def test_with_rviz2_it_opens_the_config(monkeypatch, tmp_path):
    exe = tmp_path / 'rviz2'
    exe.write_text('#!/bin/sh\n')
    exe.chmod(0o755)
    monkeypatch.setenv('PATH', str(tmp_path))
    (action,) = rviz_actions('True', 'depth.rviz')
    assert isinstance(action, ExecuteProcess)
    cmd = [''.join(getattr(p, 'text', str(p)) for p in part) for part in action.cmd]
    assert cmd == [str(exe), '-d', str(rviz_config_path('depth.rviz'))]
    assert rviz_config_path('depth.rviz').is_file()
