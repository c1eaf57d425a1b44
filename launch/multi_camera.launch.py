"""Depth for several cameras: one node serving them all from one engine, or one node per camera.

    ros2 launch tt_depth_ros multi_camera.launch.py cameras:=/front,/rear,/left
    ros2 launch tt_depth_ros multi_camera.launch.py cameras:=/front,/rear \
        backends:=ttnn device_ids:=0,1

`cameras` is a comma-separated list; `backends`, `device_ids` and `weights_path` are either one
value for every camera or one per camera (comma-separated, same order). `share_engine` true starts
ONE depth node (named depth_node, namespace `node_namespace`) whose `cameras` parameter lists every
camera: one engine, the frames taken round-robin, each camera's outputs in its namespace exactly
as a node of its own would publish them (ros/depth/cameras_param.py). False starts one node per
camera in its namespace, like depth.launch.py. Left out, it is true when every camera gets the same
backend, device and weights, else false. A parameter argument left out ('') keeps the config
file's value.
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription

#: Arguments setting the same parameter on every node (only when given).
SHARED_PARAMETER_ARGS = ('model', 'autostart', 'use_sim_time')
#: Arguments holding one value for all cameras or one per camera -> parameter name.
PER_CAMERA_ARGS = {'backends': 'backend', 'device_ids': 'device_id', 'weights_path': 'weights_path'}


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(',') if t.strip()]


def _per_camera(name: str, text: str, count: int) -> list[str]:
    """One text per camera from '' (all ''), one value (repeated) or `count` values."""
    values = _split(text)
    if not values:
        return [''] * count
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise ValueError(f'{name}:={text!r} has {len(values)} values for {count} cameras: give '
                         'one value for all cameras or one per camera')
    return values


def share_engine(text: str, per_camera: dict[str, list[str]]) -> bool:
    """The `share_engine` argument; '' = whether all cameras share backend, device, weights."""
    low = text.strip().lower()
    if low in ('true', 'false'):
        return low == 'true'
    if low:
        raise ValueError(f'share_engine:={text!r}: true, false or leave it out')
    return all(len(set(values)) == 1 for values in per_camera.values())


def _nodes(context):
    from tt_depth_ros.ros.depth.params import DEPTH_NODE_PARAMS
    from tt_depth_ros.ros.runtime.process.launch_overrides import (
        given_overrides,
        spec_types,
        write_params_file,
    )

    def get(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    types = {**spec_types(DEPTH_NODE_PARAMS), 'use_sim_time': bool}
    cameras = _split(get('cameras'))
    if not cameras:
        raise ValueError("cameras:='' names no camera: give e.g. cameras:=/front,/rear")
    per_camera = {param: _per_camera(arg, get(arg), len(cameras))
                  for arg, param in PER_CAMERA_ARGS.items()}
    shared = {name: get(name) for name in SHARED_PARAMETER_ARGS}
    image, info = get('image_topic'), get('camera_info_topic')
    if share_engine(get('share_engine'), per_camera):
        overrides = given_overrides({**shared, **{p: v[0] for p, v in per_camera.items()}}, types)
        overrides['cameras'] = [f'image={cam}/{image},camera_info={cam}/{info},ns={cam}'
                                for cam in cameras]
        return [LifecycleNode(
            package='tt_depth_ros', executable='depth_node', name='depth_node',
            namespace=get('node_namespace'), output='screen',
            parameters=[get('config'), write_params_file(overrides)])]
    nodes = []
    for i, cam in enumerate(cameras):
        raw = {**shared, **{param: values[i] for param, values in per_camera.items()}}
        overrides = given_overrides(raw, types)
        params = [get('config')] + ([write_params_file(overrides)] if overrides else [])
        nodes.append(LifecycleNode(
            package='tt_depth_ros', executable='depth_node', name='depth_node', namespace=cam,
            output='screen', parameters=params,
            remappings=[('image', image), ('image/compressed', image + '/compressed'),
                        ('camera_info', info)]))
    return nodes


def generate_launch_description() -> LaunchDescription:
    """Depth LifecycleNodes: one for all cameras (share_engine) or one per camera.

    Arguments: docs/nodes.md "Launch files and their arguments".
    """
    return LaunchDescription([
        DeclareLaunchArgument('cameras', default_value='/front,/rear',
                              description='comma-separated camera namespaces'),
        DeclareLaunchArgument('share_engine', default_value='',
                              description='true = one node and engine for every camera, false '
                              "= one node per camera; '' = true when every camera has the same "
                              'backend, device and weights'),
        DeclareLaunchArgument('node_namespace', default_value='/',
                              description='share_engine: namespace of the one node'),
        DeclareLaunchArgument('image_topic', default_value='image_raw',
                              description='image topic, relative to each camera namespace'),
        DeclareLaunchArgument('camera_info_topic', default_value='camera_info',
                              description='CameraInfo topic, relative to each camera namespace'),
        DeclareLaunchArgument('config', default_value=PathJoinSubstitution(
            [FindPackageShare('tt_depth_ros'), 'config', 'depth.yaml']),
            description='parameters file of every node'),
        DeclareLaunchArgument('backends', default_value='',
                              description='parameter backend: one for all cameras or one per '
                              'camera'),
        DeclareLaunchArgument('device_ids', default_value='',
                              description='parameter device_id: one for all cameras or one per '
                              'camera'),
        DeclareLaunchArgument('weights_path', default_value='',
                              description='parameter weights_path: one file for all cameras or '
                              'one per camera'),
        DeclareLaunchArgument('model', default_value='',
                              description='parameter model of every node'),
        DeclareLaunchArgument('autostart', default_value='',
                              description='parameter autostart of every node'),
        DeclareLaunchArgument('use_sim_time', default_value='',
                              description='parameter use_sim_time of every node'),
        OpaqueFunction(function=_nodes),
    ])
