"""tt_depth_ros: metric monocular depth and two-view reconstruction for ROS 2."""

__version__ = '0.1.0'
