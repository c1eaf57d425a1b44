"""The demo (`make demo`): sample bag -> depth and pair nodes through replay -> files to look at.

May import anything below tools, and tools.bag/bench/eval.
"""
