"""Helpers shared by the tests (process control, weight rule, fixtures data, rclpy probe).

fake_engines/ holds the network test doubles the nodes load as `engine_plugin`; ros_nodes/ the
helper process scripts (camera simulator, checker, smoke publisher/subscriber). The ttnn
stand-in, dry run and conformance check live in devtools/ttnn/.
"""
