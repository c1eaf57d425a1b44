"""The image centre on the DUSt3R grid and the inverse intrinsics mapping."""
import numpy as np
import pytest

from tt_depth_ros.geometry.preprocess.dust3r_preprocess import (
    image_centre_on_grid,
    map_intrinsics,
    network_size,
    unmap_intrinsics,
)


@pytest.mark.parametrize('w, h, mode', [(640, 480, 'crop'), (1280, 720, 'crop'),
                                        (500, 500, 'crop'), (640, 360, 'pad'), (333, 517, 'pad')])
def test_centre_is_the_mapped_image_centre_and_unmap_inverts_map(w, h, mode):
    plan = network_size(w, h, 512, mode)
    K = np.array([[700.0, 0.3, (w - 1) / 2], [0.0, 690.0, (h - 1) / 2], [0.0, 0.0, 1.0]])
    K_net = map_intrinsics(K, plan)
    assert np.allclose(image_centre_on_grid(plan), K_net[:2, 2], atol=1e-12)
    (wr, hr), (left, top) = plan.resized_wh, plan.box_ltrb[:2]
    assert np.allclose(image_centre_on_grid(plan), (wr / 2 - 0.5 - left, hr / 2 - 0.5 - top))
    assert np.allclose(unmap_intrinsics(K_net, plan), K, atol=1e-9)


def test_the_grid_centre_is_not_the_image_centre_for_a_cropped_view():
    plan = network_size(1280, 720, 512, 'crop')   # 512x288 resized, cropped to 512x288
    cx, cy = image_centre_on_grid(plan)
    h, w = plan.net_hw
    assert (cx, cy) != (w / 2, h / 2) and cx == pytest.approx(255.5)
