"""Trace-region budget and LRU eviction of traced shapes (stand-in).

The trace region is sized for `max_traced_shapes` traces (context.trace_region_size of the net's
programs_estimate); a further input shape evicts the least recently used one — its trace, input
buffers, per-shape constants and per-shape conv weights, and the library's compiled programs (the
kept shapes compile again) — instead of overflowing the region.
"""
import numpy as np
import pytest

from tt_depth_ros.engines.ttnn import build_ttnn_engine

SIZES = [(112, 112), (140, 168), (168, 168), (112, 140)]   # DA3 tiny: 14-pixel patch multiples


def image(hw, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (*hw, 3), dtype=np.uint8)


def live_count(eng):
    return len(eng.ctx.device.live_tensors())


def test_third_shape_evicts_the_least_recently_used(ttnn, da3_tiny_sd):
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd,
                           max_traced_shapes=2) as eng:
        eng.prepare(SIZES[0])
        eng.prepare(SIZES[1])
        kept = eng.infer(image(SIZES[0]))          # SIZES[0] becomes the most recently used
        eng.prepare(SIZES[2])                      # evicts SIZES[1], not SIZES[0]
        assert eng.info.details['shapes'] == [list(SIZES[0]), list(SIZES[2])]
        assert len(eng.ctx.device._traces) == 2
        evicted = live_count(eng)
        programs = eng.ctx.device.num_program_cache_entries()
        # the program cache was cleared at the eviction and the kept shape compiled again
        np.testing.assert_array_equal(eng.infer(image(SIZES[0]))['depth'], kept['depth'])
        out = eng.infer(image(SIZES[1]))           # re-prepared on demand: evicts SIZES[2]
        assert out['depth'].shape == SIZES[1]
        assert eng.info.details['shapes'] == [list(SIZES[0]), list(SIZES[1])]
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd,
                           max_traced_shapes=2) as fresh:
        fresh.prepare(SIZES[0])
        fresh.prepare(SIZES[2])
        # an evicted shape leaves nothing behind (constants, inputs, conv weights, programs)
        assert live_count(fresh) == evicted
        assert fresh.ctx.device.num_program_cache_entries() == programs


def test_region_for_one_trace_evicts_instead_of_overflowing(ttnn, da3_tiny_sd):
    """A region sized for one trace: every new shape evicts; keeping them all overflows."""
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd,
                           max_traced_shapes=1) as eng:
        for hw in SIZES:
            eng.infer(image(hw))
            assert len(eng.ctx.device._traces) == 1
        eng.max_traced_shapes = len(SIZES)         # what eviction prevents: keep them all
        with pytest.raises(RuntimeError, match='trace region'):
            for hw in SIZES:
                eng.prepare(hw)
        eng.ctx.device._capturing = None
