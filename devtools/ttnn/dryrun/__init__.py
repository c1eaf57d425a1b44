"""The dry run: the project's ttnn engines through the REAL ttnn 0.81.1 wheel on a mock p150.

    .venv/bin/python -m devtools.ttnn.dryrun.driver --model da3-tiny [--size 280x504 ...]

The engine runs in the project's venv; the real library runs in the side venv (.venv-ttnn,
Python 3.12, environment.py) as `python -m devtools.ttnn.dryrun.server`, reached over a pipe
(bridge.py, wire.py). Nothing numeric is checked (device reads return zeros): what the library
rejects, the buffer hazards (monitor.py), programs per forward, peak DRAM/L1 and the device ops
of a traced forward (op_records.py: the cost estimate's input). The modules the server imports
(server, monitor, op_records, wire) need numpy only; this file imports nothing.
"""
