"""Tools around the package: the `tt-depth` CLI, bags, the benchmark, the demo, evaluation.

cli/ predicts on image files (no ROS); bag/ reads, replays and records rosbag2 and makes the
sample bag; bench/ benchmarks a node on a bag; demo/ is `make demo`; eval/ scores accuracy and
renders the test scene. May import every layer below. Inside tools imports flow
eval -> bag -> bench -> demo; cli imports no ROS. (The model and engine micro-benchmarks that need
the test fixtures or the upstream code are in benchmarks/ at the repository root, not here.)
"""
