"""The node benchmark (`tt-depth-benchmark`): throughput, latency, drops, accuracy on a bag.

benchmark.py runs it (fixed rates, peak search, accuracy pass, optional trajectory pass of the
pair node: trajectory.py); session.py its configuration and runs; node_process.py starts, brings
up and stops the node under test; probe.py, resource_monitor.py, stats.py, report.py, plots.py
measure and write the report, ros2_benchmark_export.py the same figures in NVIDIA
ros2_benchmark's JSON layout; rule_v1_checkpoint.py writes a stand-in checkpoint when no real
weights can be had. Benchmarks print figures and never assert.

Two homes for benchmarks, on purpose: this package holds what an installed package can run on any
bag. The model and engine micro-benchmarks (forward time vs the upstream implementation, the ttnn
trace, the depth node's host overhead, any-view window accuracy) live in benchmarks/ at the
repository root, because they read test/ fixtures (test/data images, devtools/ checkpoints and
the ttnn stand-in, the test/support/fake_engines doubles) or install the upstream reference code,
which the installed package must not depend on. They run from a source checkout:
`.venv/bin/python -m benchmarks.<name>`.

May import anything below tools, and tools.bag/eval.
"""
