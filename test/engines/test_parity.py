"""engines/parity.py: magnitude figures see scale and offset; pointmaps compared per point."""
import numpy as np
import pytest

from tt_depth_ros.engines.parity import compare_maps, mask_agreement


def test_scale_and_offset_show_in_the_relative_errors_not_in_pcc():
    ref = np.random.default_rng(0).uniform(1.0, 5.0, (20, 30))
    scaled = compare_maps(ref, ref * 1.05)
    assert scaled.pcc == pytest.approx(1.0) and scaled.median_rel == pytest.approx(0.05)
    assert scaled.p99_rel == pytest.approx(0.05) and scaled.max_rel == pytest.approx(0.05)
    shifted = compare_maps(ref, ref + 0.1)
    assert shifted.pcc == pytest.approx(1.0) and shifted.max_abs == pytest.approx(0.1)
    assert shifted.median_rel == pytest.approx(np.median(0.1 / ref))
    with_nan = ref.copy()
    with_nan[0, :3] = np.nan
    assert compare_maps(ref, with_nan).finite_mismatch == pytest.approx(3 / ref.size)


def test_vector_axis_gives_the_error_of_each_point():
    """A coordinate near 0 inflates element-wise relative errors, not the per-point ones."""
    rng = np.random.default_rng(1)
    ref = np.stack([rng.normal(0, 1, (8, 9)), rng.normal(0, 1, (8, 9)),
                    rng.uniform(2, 4, (8, 9))], -1)
    ref[0, 0, 0] = 1e-9                       # x crosses 0 there
    got = ref + rng.normal(0, 1e-3, ref.shape)
    per_point = np.linalg.norm(got - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    a = compare_maps(ref, got, vector_axis=-1)
    assert a.median_rel == pytest.approx(np.median(per_point))
    assert a.p99_rel == pytest.approx(np.percentile(per_point, 99))
    assert a.max_abs == pytest.approx(np.linalg.norm(got - ref, axis=-1).max())
    assert compare_maps(ref, got).p99_rel > 10 * a.p99_rel      # element-wise: inflated
    moved = got.copy()
    moved[1, 1, 2] = np.inf                  # one point not finite: one mismatch, not three
    assert compare_maps(ref, moved, vector_axis=-1).finite_mismatch == pytest.approx(1 / 72)
    assert compare_maps(ref.transpose(2, 0, 1), got.transpose(2, 0, 1),
                        vector_axis=0).median_rel == pytest.approx(a.median_rel)


def test_mask_agreement_and_shape_errors():
    a = np.zeros((4, 5), bool)
    b = a.copy()
    b[0, :2] = True
    assert mask_agreement(a, b) == pytest.approx(18 / 20)
    with pytest.raises(ValueError, match='shapes differ'):
        compare_maps(np.ones((2, 3)), np.ones((3, 2)))
