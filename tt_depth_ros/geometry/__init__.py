"""Camera and depth geometry in numpy / OpenCV, shared by the pipelines, the nodes and the tools.

Camera models from CameraInfo, the DA3 and DUSt3R preprocessing maps and the intrinsics they
imply, metric depth and scale, depth post-processing, clouds, rectification, PnP (pointmap and
ray map), focal estimation, SE(3), keyframes, ground plane, colorized depth. The bottom layer
with models/: may import numpy, OpenCV and PIL, nothing else of the package; never torch, never
ROS.
"""
