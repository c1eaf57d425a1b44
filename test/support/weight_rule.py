"""Golden weight rule "rule-v1": re-export of its runtime home tt_depth_ros.models.weight_rule."""
from tt_depth_ros.models.weight_rule import rule_v1_state_dict, rule_v1_tensor  # noqa: F401
