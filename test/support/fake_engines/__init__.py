"""Test doubles of the network ("fake engines"), one module each; the real code runs around them.

A node selects one only through its read-only `engine_plugin: 'module:callable'` parameter (with
`engine_plugin_args` as the callable's JSON keyword arguments), here always
`'support.fake_engines.<module>:<callable>'`; node processes get test/ on PYTHONPATH
(support/rosutil.py `child_env`).

- known_depth: `KnownDepthEngine`, closed-form raw DA3 metric depth (delays, failing prepare).
- known_anyview: `KnownAnyviewEngine`, any-view / NESTED / mono DA3 with known geometry (`scene`).
- depth_code: `DepthCodeEngine`, reads planar depth back from colour-coded images (`encode_depth`).
- slow_build: `cancellable`, `blocking`, engine builds that take long (signal-during-configure).
- tiny_nested: `tiny_nested_engine`, the real NESTED engine on tiny branches with rule-v1 weights.
- pair_scene: `SceneDust3rEngine`, exact DUSt3R outputs of the ray-cast scene, and the scene's
  poses and frame-id marks the pair tests share; `tiny_dust3r_engine`, the real tiny DUSt3R.
- scene_anyview: `SceneAnyviewEngine`, a perfect DA3 any-view / NESTED engine over N scene views.
- slow_anyview_factory: not a plugin but a node entry point (`python -m
  support.fake_engines.slow_anyview_factory`) that replaces engines.factory.build_engine.
- ground_truth: `GroundTruthEngine`, a bag's ground-truth depth (tools/bench tests).
- scale_oracle: `ScaleOracleEngine`, the scale oracle's true depth times a known per-frame scale
  (support/scale_oracle.py; any DA3 kind: the metric scale tests).
- dies_once: `tiny_dies_once`, the real tiny DA3 engine whose process SIGKILLs itself once,
  mid-bag (tt-depth-batch --ray retries).
"""
