"""Array <-> ROS message conversion (images, depth, CameraInfo, PointCloud2, poses, stamps).

May import: the message packages, numpy, geometry. Never rclpy nodes, never torch.
"""
