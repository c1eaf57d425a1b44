"""Helper processes of the ROS tests, each run as `python -m support.ros_nodes.<name> ARGS`.

camera_sim (a camera publishing one PNG and its CameraInfo), depth_checker (the depth node's
outputs against the Python API), image_pub / image_sub (the smoke publisher and subscriber).
They run with test/ and the repository root on PYTHONPATH (support.rosutil.child_env).
"""
