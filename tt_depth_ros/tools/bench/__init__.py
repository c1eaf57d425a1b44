"""Benchmarks: node throughput/latency/accuracy on a bag, and the forward-time scripts.

Benchmarks print figures and never assert. May import anything below tools, and tools.bag/eval.
"""
