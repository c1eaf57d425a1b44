"""`tt-depth-batch`: many rosbag2 in, one MCAP of a node's outputs (and a manifest) each.

params_file.py reads the depth or pair node's own parameter file against that node's parameter
table; cameras.py picks the image/CameraInfo topic pairs; depth_bag.py runs one bag through the
depth node's frame path, scale stage and message builders, pair_bag.py through the pair node's per-
pair work on pair_host.py, an rclpy-free host of the pair node's interface (ros/pair/host.py);
offline_log.py gives them the node's log lines; manifest.py fingerprints inputs for resume and
writes the manifest; bag_job.py is one bag's job (skip when up to date, else process, and the
manifest), the same in every runner; progress.py shows a bar on a terminal, else a line per
finished bag; run.py is the CLI: it expands the inputs, runs the bags (in process or a local
process pool) and prints the summary; ray_runner.py runs the bags' jobs in Ray actors over a
cluster (`--ray`; Ray is an optional extra, imported only there).

May import: tools.bag, ros, pipelines, engines, geometry.
"""
