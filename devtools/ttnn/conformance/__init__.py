"""Conformance of the engines' ttnn usage and of the CPU stand-in with the real ttnn 0.81.1 wheel.

    .venv/bin/python -m devtools.ttnn.conformance.check

check.py runs in the project's venv; real_side.py inside the side venv (.venv-ttnn, Python
3.12, the real wheel and numpy, no torch), as `python -m devtools.ttnn.conformance.real_side`.
p150_mock_cluster_desc.yaml is the one-chip p150 the real library opens (also the dry run's).
"""
