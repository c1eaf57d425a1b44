"""Public home of the image, intrinsics and result file helpers (pipelines/io.py)."""
from tt_depth_ros.pipelines.io import (
                                       depth_to_mm16,
                                       intrinsics_from_args,
                                       load_rgb,
                                       read_camera_info_yaml,
                                       write_ply,
                                       write_png,
)

__all__ = ['depth_to_mm16', 'intrinsics_from_args', 'load_rgb', 'read_camera_info_yaml',
           'write_ply', 'write_png']
