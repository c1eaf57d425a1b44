"""ROS-free frame paths: one per model family, shared by the API, the nodes and the batch tools.

`depth.py` is THE DA3 frame path (image + intrinsics -> engine -> depth, confidence, K at the
output resolution); `dust3r.py` the DUSt3R two-view path; `pair_dust3r.py` / `pair_anyview.py` the
pair node's per-pair work on either engine; `multiview.py` DA3 any-view over N images;
`relative_scale.py` the metric scale of a relative frame; `io.py` image and result files;
`engine_owner.py` the predictors' context manager.
May import: engines, geometry, models (through engines). Never rclpy, never api, ros or tools.
"""
