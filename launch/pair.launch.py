"""Launch the DUSt3R pair node: `ros2 launch tt_depth_ros pair.launch.py mode:=stereo|temporal`.

Stereo: subscribes <camera1>/image, <camera1>/camera_info, <camera2>/image, <camera2>/camera_info.
Temporal: subscribes <camera>/image and <camera>/camera_info. Outputs (points, pose, depth, ...)
are relative to `namespace`; /tf is global. Parameters come from config/pair.yaml, then the
arguments below. The node brings itself to active when `autostart` is true (its own parameter, so
the same behaviour holds with launch_ros on Humble, Jazzy and later, and without launch).
Always run ROS with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST unless the robot network is wanted.
"""
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    """Arguments: mode, namespace, camera/camera1/camera2, model, backend, device_id, config."""
    cfg = LaunchConfiguration
    args = [
        DeclareLaunchArgument('mode', default_value='stereo', choices=['stereo', 'temporal'],
                              description='stereo (two cameras) or temporal (one camera)'),
        DeclareLaunchArgument('namespace', default_value='dust3r'),
        DeclareLaunchArgument('camera', default_value='/camera',
                              description='temporal: camera base topic'),
        DeclareLaunchArgument('camera1', default_value='/left', description='stereo: camera 1'),
        DeclareLaunchArgument('camera2', default_value='/right', description='stereo: camera 2'),
        DeclareLaunchArgument('model', default_value='dust3r-vitl-512-dpt'),
        DeclareLaunchArgument('weights_path', default_value=''),
        DeclareLaunchArgument('backend', default_value='auto',
                              choices=['auto', 'ttnn', 'torch-cuda', 'torch-cpu']),
        DeclareLaunchArgument('device_id', default_value='0'),
        DeclareLaunchArgument('scale_source', default_value='none',
                              choices=['none', 'baseline', 'depth']),
        DeclareLaunchArgument('baseline_m', default_value='0.0'),
        DeclareLaunchArgument('autostart', default_value='true'),
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [FindPackageShare('tt_depth_ros'), 'config', 'pair.yaml'])),
    ]
    overrides = {
        'mode': cfg('mode'), 'model': cfg('model'), 'weights_path': cfg('weights_path'),
        'backend': cfg('backend'),
        'device_id': PythonExpression(['int(', cfg('device_id'), ')']),
        'scale_source': cfg('scale_source'),
        'baseline_m': PythonExpression(['float(', cfg('baseline_m'), ')']),
        'autostart': PythonExpression(["'", cfg('autostart'), "'.lower() == 'true'"]),
    }
    is_stereo = PythonExpression(["'", cfg('mode'), "' == 'stereo'"])
    stereo_remaps = [('camera1/image', [cfg('camera1'), '/image']),
                     ('camera1/camera_info', [cfg('camera1'), '/camera_info']),
                     ('camera2/image', [cfg('camera2'), '/image']),
                     ('camera2/camera_info', [cfg('camera2'), '/camera_info'])]
    temporal_remaps = [('image', [cfg('camera'), '/image']),
                       ('camera_info', [cfg('camera'), '/camera_info'])]
    common = dict(package='tt_depth_ros', executable='pair_node', name='pair_node',
                  namespace=cfg('namespace'), output='screen',
                  parameters=[cfg('config'), overrides])
    return LaunchDescription(args + [
        LifecycleNode(remappings=stereo_remaps, condition=IfCondition(is_stereo), **common),
        LifecycleNode(remappings=temporal_remaps, condition=UnlessCondition(is_stereo),
                      **common),
    ])
