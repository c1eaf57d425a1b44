"""What every node shares: lifecycle base, inputs, CameraInfo sync, worker, params, QoS, TF.

May import: rclpy and the message packages, ros.msgs, pipelines, geometry, engines (the Engine
interface; engines.factory, which brings torch, only when an engine is built). Never torch, never
the node packages (ros.depth, ros.pair) or tools.
"""
