"""rosbag2 tools: read/write raw CDR, replay into live topics, record, the synthetic sample bag.

May import: ros, pipelines, geometry, tools.eval.
"""
