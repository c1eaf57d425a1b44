"""Launch the DUSt3R pair node: `ros2 launch tt_depth_ros pair.launch.py mode:=stereo|temporal`.

Stereo: subscribes <camera1>/<image_topic>, <camera1>/<camera_info_topic> and the same of <camera2>.
Temporal: subscribes <camera>/<image_topic> and <camera>/<camera_info_topic> (an absolute
image_topic / camera_info_topic is used as is). With input_transport compressed, <...>/compressed.
Outputs (points, pose, depth, ...) are relative to `namespace`; /tf is global. rviz:=true also
opens rviz/pair.rviz when rviz2 is installed (ros/runtime/process/rviz_launch.py). Parameters come
from the `config` file (config/pair.yaml by default); a parameter argument given on the command line
overrides it, one left out ('') keeps the file's value (mode included: both modes' inputs are
remapped, the node subscribes those of its mode). The node's own `autostart` parameter brings it
to active; with autostart:=false use `ros2 lifecycle set <namespace>/pair_node configure`, then
`activate`. ROS environment variables are the caller's.
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription

#: Launch arguments that set the node parameter of the same name (only when given).
PARAMETER_ARGS = ('mode', 'model', 'weights_path', 'backend', 'device_id', 'pose_source',
                  'scale_source', 'baseline_m', 'autostart', 'use_sim_time')


def _under(base: str, topic: str) -> str:
    """`topic` below the camera `base` (an absolute topic stays as it is)."""
    return topic if topic.startswith('/') else f"{base.rstrip('/')}/{topic}"


def _node(context):
    from tt_depth_ros.ros.pair.params import PAIR_PARAMS
    from tt_depth_ros.ros.runtime.common_params import COMMON_PARAMS
    from tt_depth_ros.ros.runtime.process.launch_overrides import (
        given_overrides,
        spec_types,
        write_params_file,
    )
    from tt_depth_ros.ros.runtime.process.rviz_launch import rviz_actions

    def get(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    types = {**spec_types(COMMON_PARAMS, PAIR_PARAMS), 'use_sim_time': bool}
    overrides = given_overrides({name: get(name) for name in PARAMETER_ARGS}, types)
    params = [get('config')] + ([write_params_file(overrides)] if overrides else [])
    image, info = get('image_topic'), get('camera_info_topic')
    cam, cam1, cam2 = get('camera'), get('camera1'), get('camera2')
    remaps = [('camera1/image', _under(cam1, image)), ('camera1/camera_info', _under(cam1, info)),
              ('camera2/image', _under(cam2, image)), ('camera2/camera_info', _under(cam2, info)),
              ('image', _under(cam, image)), ('camera_info', _under(cam, info))]
    remaps += [(src + '/compressed', dst + '/compressed') for src, dst in remaps
               if src.endswith('image')]
    return [LifecycleNode(package='tt_depth_ros', executable='pair_node', name='pair_node',
                          namespace=get('namespace'), output='screen', parameters=params,
                          remappings=remaps)] + rviz_actions(get('rviz'), 'pair.rviz')


def generate_launch_description() -> LaunchDescription:
    """One pair LifecycleNode; arguments: docs/nodes.md "Launch files and their arguments"."""
    return LaunchDescription([
        DeclareLaunchArgument('namespace', default_value='dust3r',
                              description='namespace of the node and its outputs'),
        DeclareLaunchArgument('camera', default_value='/camera',
                              description='temporal: camera namespace of the inputs'),
        DeclareLaunchArgument('camera1', default_value='/left',
                              description='stereo: camera 1 namespace'),
        DeclareLaunchArgument('camera2', default_value='/right',
                              description='stereo: camera 2 namespace'),
        DeclareLaunchArgument('image_topic', default_value='image',
                              description='image topic below each camera namespace'),
        DeclareLaunchArgument('camera_info_topic', default_value='camera_info',
                              description='CameraInfo topic below each camera namespace'),
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [FindPackageShare('tt_depth_ros'), 'config', 'pair.yaml']),
            description='parameters file of the node'),
        DeclareLaunchArgument('mode', default_value='',
                              description='parameter mode: stereo (two cameras) or temporal '
                              '(one camera)'),
        DeclareLaunchArgument('model', default_value='',
                              description='parameter model (dust3r-vitl-512-dpt, ...)'),
        DeclareLaunchArgument('weights_path', default_value='',
                              description='parameter weights_path: explicit weights file'),
        DeclareLaunchArgument('backend', default_value='',
                              description='parameter backend: auto, ttnn, torch-cuda or torch-cpu'),
        DeclareLaunchArgument('device_id', default_value='',
                              description='parameter device_id: accelerator index'),
        DeclareLaunchArgument('pose_source', default_value='',
                              description='parameter pose_source: auto, camera_decoder or pnp '
                              '(DA3 any-view models)'),
        DeclareLaunchArgument('scale_source', default_value='',
                              description='parameter scale_source: none, baseline or depth'),
        DeclareLaunchArgument('baseline_m', default_value='',
                              description='parameter baseline_m: stereo baseline, metres'),
        DeclareLaunchArgument('autostart', default_value='',
                              description='parameter autostart: true = configure and activate at '
                              'startup, false = wait for ros2 lifecycle set'),
        DeclareLaunchArgument('use_sim_time', default_value='',
                              description='parameter use_sim_time: true = the node clock follows '
                              '/clock'),
        DeclareLaunchArgument('rviz', default_value='false',
                              description='true = also start rviz2 with rviz/pair.rviz (one log '
                              'line instead when rviz2 is not installed)'),
        OpaqueFunction(function=_node),
    ])
