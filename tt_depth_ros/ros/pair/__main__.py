"""`python -m tt_depth_ros.ros.pair`: the pair node by the console script's own path."""
from tt_depth_ros.ros.entry_points import pair_node

raise SystemExit(pair_node())
