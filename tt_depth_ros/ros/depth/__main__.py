"""`python -m tt_depth_ros.ros.depth`: the depth node by the console script's own path."""
from tt_depth_ros.ros.entry_points import depth_node

raise SystemExit(depth_node())
