"""Evaluation only: accuracy against ground truth and the ray-cast test scene.

May import: geometry, numpy. Used by the benchmark, the sample bag and tests, never by a node.
"""
