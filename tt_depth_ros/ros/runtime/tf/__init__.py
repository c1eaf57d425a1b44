"""TF without tf2_ros: a small buffer, the camera height from it, the QoS /tf uses."""
