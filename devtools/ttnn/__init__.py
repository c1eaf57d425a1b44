"""The ttnn simulator: what runs the ttnn engines without a Tenstorrent card.

- standin/: a CPU stand-in of the subset of ttnn 0.81.1 the engines use (installed as `ttnn`).
- dryrun/: the engines through the REAL ttnn 0.81.1 wheel on a mock p150 (a Python 3.12 side venv).
- conformance/: the engines' ttnn calls and the stand-in checked against the real wheel.
- cost_model.py: a p150 roofline over the device ops a dry run records (benchmarks/ttnn_estimate.py
  prints it).

Imports nothing itself: the dry run's server and the conformance check's real side import their
modules from here inside the side venv, which has numpy and ttnn but no torch.
"""
