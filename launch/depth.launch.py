"""Launch the DA3 metric depth node: `ros2 launch tt_depth_ros depth.launch.py camera:=/front`.

The node runs in namespace <camera>: it subscribes <camera>/<image_topic> (or
<camera>/<image_topic>/compressed with input_transport:=compressed) and
<camera>/<camera_info_topic> (and <metric_cloud_topic> or <metric_depth_topic> with a
scale_source), and publishes <camera>/depth, <camera>/depth/camera_info,
<camera>/points, <camera>/depth/colorized (<camera>/depth/compressedDepth with
compressed_depth:=true in the config) and /diagnostics; rviz:=true also opens rviz/depth.rviz
when rviz2 is installed (ros/runtime/process/rviz_launch.py). Parameters come from the `config` file
(config/depth.yaml by default); a parameter argument given on the command line overrides it, one
left out ('') keeps the file's value. It is a launch_ros LifecycleNode; the node's own `autostart`
parameter brings it to active (the same on Jazzy, later distros and without launch); with
autostart:=false drive it with `ros2 lifecycle set <camera>/<node_name> configure` and `...
activate`. ROS environment variables (ROS_DOMAIN_ID, RMW_IMPLEMENTATION, discovery range, DDS
profile) are the caller's.
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription

#: Launch arguments that set the node parameter of the same name (only when given).
PARAMETER_ARGS = ('model', 'weights_path', 'backend', 'device_id', 'input_transport', 'autostart',
                  'use_sim_time', 'scale_source', 'scale_filter', 'scale_fixed_frame')


def _node(context):
    from tt_depth_ros.ros.depth.params import DEPTH_NODE_PARAMS
    from tt_depth_ros.ros.runtime.process.launch_overrides import (
        given_overrides,
        spec_types,
        write_params_file,
    )
    from tt_depth_ros.ros.runtime.process.rviz_launch import rviz_actions

    def get(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    types = {**spec_types(DEPTH_NODE_PARAMS), 'use_sim_time': bool}
    overrides = given_overrides({name: get(name) for name in PARAMETER_ARGS}, types)
    params = [get('config')] + ([write_params_file(overrides)] if overrides else [])
    image = get('image_topic')
    return [LifecycleNode(
        package='tt_depth_ros', executable='depth_node', name=get('node_name'),
        namespace=get('camera'), output='screen', parameters=params,
        remappings=[('image', image), ('image/compressed', image + '/compressed'),
                    ('camera_info', get('camera_info_topic')),
                    ('metric_cloud', get('metric_cloud_topic')),
                    ('metric_depth', get('metric_depth_topic'))])] + rviz_actions(
        get('rviz'), 'depth.rviz')


def generate_launch_description() -> LaunchDescription:
    """One depth LifecycleNode; arguments: docs/nodes.md "Launch files and their arguments"."""
    return LaunchDescription([
        DeclareLaunchArgument('camera', default_value='/camera',
                              description='namespace of the node: its inputs and outputs'),
        DeclareLaunchArgument('image_topic', default_value='image_raw',
                              description='image topic, relative to the camera namespace'),
        DeclareLaunchArgument('camera_info_topic', default_value='camera_info',
                              description='CameraInfo topic, relative to the camera namespace'),
        DeclareLaunchArgument('node_name', default_value='depth_node',
                              description='node name'),
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [FindPackageShare('tt_depth_ros'), 'config', 'depth.yaml']),
            description='parameters file of the node'),
        DeclareLaunchArgument('model', default_value='',
                              description='parameter model (da3metric-large, ...)'),
        DeclareLaunchArgument('weights_path', default_value='',
                              description='parameter weights_path: explicit weights file'),
        DeclareLaunchArgument('backend', default_value='',
                              description='parameter backend: auto, ttnn, torch-cuda, torch-cpu or '
                                          'onnxruntime (weights_path: an exported .onnx)'),
        DeclareLaunchArgument('device_id', default_value='',
                              description='parameter device_id: accelerator index'),
        DeclareLaunchArgument('input_transport', default_value='',
                              description='parameter input_transport: raw or compressed'),
        DeclareLaunchArgument('autostart', default_value='',
                              description='parameter autostart: true = configure and activate at '
                              'startup, false = wait for ros2 lifecycle set'),
        DeclareLaunchArgument('use_sim_time', default_value='',
                              description='parameter use_sim_time: true = the node clock follows '
                              '/clock'),
        DeclareLaunchArgument('scale_source', default_value='',
                              description='parameter scale_source: none, depth, camera_height, '
                              'cloud (a LiDAR on metric_cloud_topic) or temporal'),
        DeclareLaunchArgument('scale_filter', default_value='',
                              description='parameter scale_filter: none or kalman'),
        DeclareLaunchArgument('scale_fixed_frame', default_value='',
                              description='parameter scale_fixed_frame: odometry frame for a '
                              'moving camera (e.g. odom)'),
        DeclareLaunchArgument('metric_cloud_topic', default_value='metric_cloud',
                              description='scale_source cloud: the LiDAR PointCloud2 topic, '
                              'relative to the camera namespace or absolute'),
        DeclareLaunchArgument('metric_depth_topic', default_value='metric_depth',
                              description='scale_source depth: the metric depth image topic, '
                              'relative to the camera namespace or absolute'),
        DeclareLaunchArgument('rviz', default_value='false',
                              description='true = also start rviz2 with rviz/depth.rviz (one log '
                              'line instead when rviz2 is not installed)'),
        OpaqueFunction(function=_node),
    ])
