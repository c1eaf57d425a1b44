"""Launch the DA3 metric depth node: `ros2 launch tt_depth_ros depth.launch.py camera:=/front`.

The node runs in namespace <camera>: it subscribes <camera>/<image_topic> (or
<camera>/<image_topic>/compressed with input_transport:=compressed) and <camera>/camera_info, and
publishes <camera>/depth, <camera>/depth/camera_info, <camera>/points, <camera>/depth/colorized and
/diagnostics. Parameters come from config/depth.yaml, then the arguments below. It is a launch_ros
LifecycleNode; the node's own `autostart` parameter brings it to active (works on Humble, Jazzy,
later distros and without launch). Always run ROS with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
unless the robot network is wanted.
"""
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    """One LifecycleNode; arguments camera, image_topic, ..., config (see module docstring)."""
    cfg = LaunchConfiguration
    args = [
        DeclareLaunchArgument('camera', default_value='/camera',
                              description='namespace of the camera (inputs and outputs)'),
        DeclareLaunchArgument('image_topic', default_value='image_raw',
                              description='image topic relative to the camera namespace'),
        DeclareLaunchArgument('camera_info_topic', default_value='camera_info'),
        DeclareLaunchArgument('node_name', default_value='depth_node'),
        DeclareLaunchArgument('model', default_value='da3metric-large'),
        DeclareLaunchArgument('weights_path', default_value=''),
        DeclareLaunchArgument('backend', default_value='auto',
                              choices=['auto', 'ttnn', 'torch-cuda', 'torch-cpu']),
        DeclareLaunchArgument('device_id', default_value='0'),
        DeclareLaunchArgument('input_transport', default_value='raw',
                              choices=['raw', 'compressed']),
        DeclareLaunchArgument('autostart', default_value='true'),
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [FindPackageShare('tt_depth_ros'), 'config', 'depth.yaml'])),
    ]
    overrides = {
        'model': cfg('model'), 'weights_path': cfg('weights_path'), 'backend': cfg('backend'),
        'device_id': PythonExpression(['int(', cfg('device_id'), ')']),
        'input_transport': cfg('input_transport'),
        'autostart': PythonExpression(["'", cfg('autostart'), "'.lower() == 'true'"]),
    }
    remaps = [('image', cfg('image_topic')),
              ('image/compressed', [cfg('image_topic'), '/compressed']),
              ('camera_info', cfg('camera_info_topic'))]
    node = LifecycleNode(package='tt_depth_ros', executable='depth_node', name=cfg('node_name'),
                         namespace=cfg('camera'), output='screen', remappings=remaps,
                         parameters=[cfg('config'), overrides])
    return LaunchDescription(args + [node])
