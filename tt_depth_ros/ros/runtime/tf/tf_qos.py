"""The QoS tf2 uses for /tf and /tf_static, so TF listeners (RViz, tf2_ros buffers) match it.

tf2_ros's TransformBroadcaster publishes /tf reliable, volatile, keep last 100
(DynamicBroadcasterQoS); StaticTransformBroadcaster publishes /tf_static reliable, transient
local, keep last 1 (StaticBroadcasterQoS), so late listeners still get the static tree. Its
TransformListener subscribes /tf with the same profile as the broadcaster (DynamicListenerQoS)
and /tf_static transient local, keep last 100 (StaticListenerQoS): one message from each of
several static broadcasters fits. The pair node's output QoS parameters
(output_reliability/output_depth) never apply to TF.
"""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

TF_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
TF_STATIC_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                           reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
TF_STATIC_LISTENER_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                                    reliability=ReliabilityPolicy.RELIABLE,
                                    durability=DurabilityPolicy.TRANSIENT_LOCAL)
