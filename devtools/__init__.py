"""Development tools of this checkout, used by the tests and the benchmarks; never shipped.

ttnn/ is the ttnn simulator (devtools/ttnn/__init__.py); checkpoints.py gives the checkpoints of
the test configs with rule-v1 weights (rule_weights.py: the rule, cached per test run). The
product package `tt_depth_ros` never imports this package (test/test_layers.py), and setup.py does
not install it. Run from the repository root, e.g. `python -m devtools.ttnn.dryrun.driver`.
"""
