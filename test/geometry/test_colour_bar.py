"""The depth colour bar matches the panel colours: the value at a row has the colour of that depth.

Checked against colorize_depth itself (a bar whose colours disagree with the panel would mislead),
and the demo panel gains the bar only beside a valid range.
"""
import numpy as np
import pytest

from tt_depth_ros.geometry.depth.colorize import colorize_depth, colour_bar
from tt_depth_ros.tools.demo.outputs import depth_panel


def test_bar_rows_have_the_colour_of_their_depth():
    lo, hi, h = 1.0, 5.0, 120
    bar = colour_bar(lo, hi, h)
    assert bar.shape == (h, 84, 3) and bar.dtype == np.uint8
    top, bottom = 22, h - 6
    for frac in (0.0, 0.5, 1.0):                      # top = far (hi), bottom = near (lo)
        row = int(round(top + frac * (bottom - top - 1)))
        depth = hi - frac * (hi - lo)
        want = colorize_depth(np.array([[depth]], np.float32), lo, hi)[0, 0]
        np.testing.assert_allclose(bar[row, 8].astype(int), want.astype(int), atol=6)
    assert (bar[:, 30:] < 128).any()                  # labels were drawn
    rel = colour_bar(0.2, 0.9, h, unit='relative')
    assert not np.array_equal(rel[:14], bar[:14])     # a different header ('relative')
    with pytest.raises(ValueError, match='lo < hi'):
        colour_bar(2.0, 2.0, h)
    with pytest.raises(ValueError, match='height >= 40'):
        colour_bar(1.0, 2.0, 20)


def test_panel_has_the_bar_beside_a_valid_range():
    rgb = np.zeros((60, 80, 3), np.uint8)
    gt = np.linspace(1, 3, 60 * 80, dtype=np.float32).reshape(60, 80)
    panel = depth_panel(rgb, gt, gt)
    assert panel.shape == (60, 3 * 80 + 3 * 4 + 84, 3)
    assert depth_panel(rgb, np.full((60, 80), np.nan, np.float32)).shape == (60, 2 * 80 + 4, 3)
