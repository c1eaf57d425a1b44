"""One depth node per camera, each with its own accelerator (one process holds one device).

    ros2 launch tt_depth_ros multi_camera.launch.py cameras:=/front,/rear \
        backends:=ttnn,ttnn device_ids:=0,1

`cameras`, `backends` and `device_ids` are comma-separated lists of equal length (a single backend
or device id is repeated for every camera). Each node runs in its camera's namespace exactly like
depth.launch.py (same topics, config/depth.yaml, autostart) and is named depth_node.
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(',') if t.strip()]


def _nodes(context):
    get = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    cameras = _split(get('cameras'))
    backends, devices = _split(get('backends')), _split(get('device_ids'))
    if len(backends) == 1:
        backends *= len(cameras)
    if len(devices) == 1:
        devices *= len(cameras)
    if not cameras or len(backends) != len(cameras) or len(devices) != len(cameras):
        raise ValueError(f'cameras={cameras}, backends={backends}, device_ids={devices}: give '
                         'one backend and one device id per camera (or one for all)')
    autostart = get('autostart').lower() == 'true'
    nodes = []
    for cam, backend, dev in zip(cameras, backends, devices):
        nodes.append(LifecycleNode(
            package='tt_depth_ros', executable='depth_node', name='depth_node', namespace=cam,
            output='screen',
            remappings=[('image', get('image_topic')),
                        ('image/compressed', get('image_topic') + '/compressed'),
                        ('camera_info', get('camera_info_topic'))],
            parameters=[get('config'), {'backend': backend, 'device_id': int(dev),
                                        'model': get('model'), 'autostart': autostart}]))
    return nodes


def generate_launch_description() -> LaunchDescription:
    """Arguments: cameras, backends, device_ids, image_topic, camera_info_topic, model, ..."""
    return LaunchDescription([
        DeclareLaunchArgument('cameras', default_value='/front,/rear'),
        DeclareLaunchArgument('backends', default_value='auto'),
        DeclareLaunchArgument('device_ids', default_value='0,1'),
        DeclareLaunchArgument('image_topic', default_value='image_raw'),
        DeclareLaunchArgument('camera_info_topic', default_value='camera_info'),
        DeclareLaunchArgument('model', default_value='da3metric-large'),
        DeclareLaunchArgument('autostart', default_value='true'),
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [FindPackageShare('tt_depth_ros'), 'config', 'depth.yaml'])),
        OpaqueFunction(function=_nodes),
    ])
