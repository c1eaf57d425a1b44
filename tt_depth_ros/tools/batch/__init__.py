"""`tt-depth-batch`: many rosbag2 in, one MCAP of the depth node's outputs (and a manifest) each.

params_file.py reads the node's own parameter file against the node's parameter table;
cameras.py picks the image/CameraInfo topic pairs; depth_bag.py runs one bag through the node's
frame path and message builders; manifest.py fingerprints inputs for resume and writes the
manifest; run.py expands the inputs, runs the bags (a local process pool) and prints the summary.

May import: tools.bag, ros, pipelines, engines, geometry.
"""
