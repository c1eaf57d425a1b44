"""Golden weight rules "rule-v1" and "rule-v1 + X1": re-export of tt_depth_ros.models.weight_rule.

`x1=True` adds rule X1 (test/data/da3_anyview/README.md).
"""
from tt_depth_ros.models.weight_rule import rule_v1_state_dict, rule_v1_tensor  # noqa: F401
