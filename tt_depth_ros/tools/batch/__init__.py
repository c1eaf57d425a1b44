"""`tt-depth-batch`: many rosbag2 in, one MCAP of the depth node's outputs (and a manifest) each.

params_file.py reads the node's own parameter file against the node's parameter table;
cameras.py picks the image/CameraInfo topic pairs; depth_bag.py runs one bag through the node's
frame path and message builders; manifest.py fingerprints inputs for resume and writes the
manifest; bag_job.py is one bag's job (skip when up to date, else process, and the manifest),
the same in every runner; progress.py logs a line per finished bag; run.py is the CLI: it expands
the inputs, runs the bags (in process or a local process pool) and prints the summary;
ray_runner.py runs the bags' jobs in Ray actors over a cluster (`--ray`; Ray is an optional
extra, imported only there).

May import: tools.bag, ros, pipelines, engines, geometry.
"""
