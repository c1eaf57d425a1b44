"""The `tt-depth` command: predict on image files with any model (no ROS).

May import: api, pipelines, engines, geometry. Never ros.
"""
