"""The `--loopback` option of the bag CLIs (replay, record): ROS 2 confined to this host on request.

By default these tools use the ROS environment as given, like the nodes; `--loopback` applies the
loopback environment (ros/runtime/process/loopback.py) before rclpy starts.
"""
from __future__ import annotations

import argparse


def add_loopback_option(parser: argparse.ArgumentParser) -> None:
    """Add `--loopback` to a bag CLI's parser."""
    parser.add_argument('--loopback', action='store_true',
                        help='confine ROS 2 to this host (LOCALHOST discovery, the loopback Fast '
                             'DDS profile, rmw_fastrtps_cpp; keeps an exported ROS_DOMAIN_ID, else '
                             'picks one for this run); default: the ROS environment as given')


def apply_loopback_option(args: argparse.Namespace) -> None:
    """Apply the loopback environment when `--loopback` was given (call before rclpy.init)."""
    if args.loopback:
        from tt_depth_ros.ros.runtime.process.loopback import apply_loopback_env
        apply_loopback_env()
