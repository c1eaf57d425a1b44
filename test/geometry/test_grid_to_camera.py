"""geometry/depth/grid_to_camera.py: network-grid depth back at camera resolution (crop and pad)."""
import numpy as np
import pytest

from tt_depth_ros.geometry.depth.grid_to_camera import grid_to_camera
from tt_depth_ros.geometry.preprocess.dust3r_preprocess import (
    map_intrinsics,
    network_size,
    unmap_intrinsics,
)


@pytest.mark.parametrize('w, h, mode', [(640, 480, 'crop'), (1280, 720, 'crop'),
                                        (640, 360, 'pad')])
def test_a_plane_on_the_grid_is_the_same_plane_at_camera_resolution(w, h, mode):
    plan = network_size(w, h, 512, mode)
    K = np.array([[500.0, 0, (w - 1) / 2], [0, 500.0, (h - 1) / 2], [0, 0, 1]])
    K_net = map_intrinsics(K, plan)
    # planar depth of a tilted plane: 1/z is affine in the pixel coordinates of any pinhole
    a, b, c = 0.3, 0.2, 0.25     # 1/z = a*x + b*y + c with x, y normalised coordinates

    def plane(Km, hw):
        v, u = np.mgrid[0:hw[0], 0:hw[1]].astype(np.float64)
        x, y = (u - Km[0, 2]) / Km[0, 0], (v - Km[1, 2]) / Km[1, 1]
        return 1.0 / (a * x + b * y + c)
    grid = plane(K_net, plan.net_hw).astype(np.float32)
    if mode == 'pad':
        grid[~plan.valid_mask()] = np.nan
    cam = grid_to_camera(grid, plan)
    assert cam.shape == (h, w)
    truth = plane(unmap_intrinsics(K_net, plan), (h, w))
    ok = np.isfinite(cam)
    rel = np.abs(cam[ok] - truth[ok]) / truth[ok]
    assert np.median(rel) < 1e-3 and np.percentile(rel, 99) < 2e-2   # bilinear, border clamp
    if mode == 'crop' and plan.box_ltrb[1] > 0:
        assert np.isnan(cam[0]).all()        # rows the crop removed have no data
    else:
        assert ok.mean() > 0.97
    with pytest.raises(ValueError):
        grid_to_camera(grid[:-1], plan)
