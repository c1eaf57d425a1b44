"""The ttnn simulator: what runs the ttnn engines without a Tenstorrent card.

- standin/: a CPU stand-in of the subset of ttnn 0.81.1 the engines use (installed as `ttnn`).
- dryrun/: the engines through the REAL ttnn 0.81.1 wheel on a mock p150 (a Python 3.12 side venv).
- conformance/: the engines' ttnn calls and the stand-in checked against the real wheel.
- cost_model.py: the p150 device-time estimate of the device ops a dry run records: roofline,
  per-class estimate (op_classes.py, fitted on the published figures of blackhole_figures.py and
  data/gemm_p150.csv) and single factor (benchmarks/ttnn_estimate.py prints it).
- reference_designs/: the measured DUSt3R and DA3 ports as data, for the estimate's validation
  (benchmarks/ttnn_validate.py); profile_compare.py: a card's profiler report beside the estimate.

Imports nothing itself: the dry run's server and the conformance check's real side import their
modules from here inside the side venv, which has numpy and ttnn but no torch.
"""
