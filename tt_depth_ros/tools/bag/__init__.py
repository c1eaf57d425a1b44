"""rosbag2 tools: read/write raw CDR, replay into live topics, record, the synthetic sample bag.

io.py reads bags and restamps raw messages; decode.py turns serialized messages into arrays;
replay.py plays a bag into live topics (rate- or consumer-paced); record.py records topics
(both CLIs take loopback_option.py's `--loopback`); sample.py renders the deterministic sample
bag with ground truth (its topic names are the constants the benchmark and demo use).

May import: ros, pipelines, geometry, tools.eval.
"""
