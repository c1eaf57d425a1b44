"""The ROS 2 layer (rclpy): the depth node and the pair node and what they share.

runtime/ the lifecycle base and node machinery; msgs/ array <-> message conversion; depth/ and
pair/ the two nodes; entry_points.py the console scripts. May import: rclpy and the message
packages, api, pipelines, engines (an engine is built through engines/, which keeps torch behind
it), geometry. Never torch, never tools. runtime/ and msgs/ never import a node package; depth/
and pair/ never import each other.
"""
