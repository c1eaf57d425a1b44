"""SDPA's Q chunk per head count (engines/ttnn/config.py sdpa_q_chunk).

Judged against a direct simulation of how the library's SDPA program hands out its work
(batch, then heads, then Q chunks, each core a contiguous share), not against the formula itself.
"""
import itertools

import pytest

from tt_depth_ros.engines.ttnn.config import SDPA_CHUNKS, sdpa_q_chunk, shape_config


def busiest_rows_simulated(seq: int, heads: int, batch: int, cores: int, chunk: int) -> int:
    """Deal (batch, head, q chunk) units to cores the way sdpa_program_factory does; max rows."""
    chunks = seq // chunk
    bf = min(batch, cores)
    hf = min(cores // bf, heads)
    qf = min(cores // (bf * hf), chunks)
    load = {}
    for b, h, q in itertools.product(range(batch), range(heads), range(chunks)):
        core = (b * bf // batch, h * hf // heads, q * qf // chunks)
        load[core] = load.get(core, 0) + chunk
    assert len(load) <= cores
    return max(load.values())


@pytest.mark.parametrize('seq,heads,batch', [
    (768, 16, 1), (768, 12, 1), (768, 16, 2), (1376, 16, 1), (736, 16, 1), (736, 6, 1),
    (1024, 12, 1), (512, 4, 1), (64, 2, 1)])
def test_q_chunk_leaves_the_busiest_core_the_fewest_rows(seq, heads, batch):
    got = sdpa_q_chunk(seq, heads, batch, 110)
    assert seq % got == 0 and got in SDPA_CHUNKS
    rows = {c: busiest_rows_simulated(seq, heads, batch, 110, c)
            for c in SDPA_CHUNKS if seq % c == 0}
    assert rows[got] == min(rows.values()), rows
    assert got == max(c for c in rows if rows[c] == rows[got])     # the larger on a tie


def test_dust3r_encoder_and_decoder_chunks():
    """768 tokens (512x384 / 16): the old one-size rule took 256 for every attention."""
    assert busiest_rows_simulated(768, 16, 1, 110, 256) == 256
    sc = shape_config(384, 512, 16, 0, (11, 10))
    assert sc.k_chunk == 256 and not sc.masked
    assert sc.q_chunk(16) == 128 and busiest_rows_simulated(768, 16, 1, 110, 128) == 128
    assert sc.q_chunk(12) == 32 and busiest_rows_simulated(768, 12, 1, 110, 32) == 96
    # DA3-L 518x518: 1370 tokens pad to 1376 = 43 tiles, only 32 divides
    da3 = shape_config(518, 518, 14, 1, (11, 10))
    assert da3.masked and da3.k_chunk == 32 and da3.q_chunk(16) == 32
