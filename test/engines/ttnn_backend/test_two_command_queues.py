"""Trace + 2 command queues on the stand-in: ordering, no stale input, no lost frame, shutdown.

The stand-in runs the two queues under adversarial but legal schedules (devtools/ttnn/standin/
queues.py): 'cq0_lazy' holds the trace queue back until something forces it, 'cq1_lazy' holds
the upload queue back. A missing event in either direction then shows up as a wrong frame. Every
frame is distinct (its own random image); a pipelined engine must return, for each ticket, the
outputs the one-queue engine gives for that same image.
"""
import numpy as np
import pytest

from devtools.ttnn.standin import queues
from tt_depth_ros.engines.ttnn import build_ttnn_engine
from tt_depth_ros.geometry.preprocess.resize_map import resize_map

SHAPE = (28, 42)
SCHEDULES = ('in_order', 'cq0_lazy', 'cq1_lazy')


@pytest.fixture
def schedule(ttnn, request):
    yield lambda name: queues.set_queue_schedule(name)
    queues.set_queue_schedule('in_order')


def frames(n, shape=SHAPE, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (*shape, 3), dtype=np.uint8) for _ in range(n)]


def reference(sd, images):
    """Per-image outputs of the one-queue engine (the order-free truth)."""
    with build_ttnn_engine('da3metric-tiny', state_dict=sd) as eng:
        eng.prepare(SHAPE)
        return [eng.infer(im) for im in images]


def assert_same(got, want):
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


@pytest.mark.parametrize('name', SCHEDULES)
def test_pipelined_frames_each_get_their_own_outputs(ttnn, da3_tiny_sd, schedule, name):
    images = frames(4)
    want = reference(da3_tiny_sd, images)
    schedule(name)
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2) as eng:
        assert eng.info.details['command_queues'] == 2
        eng.prepare(SHAPE)
        # depth-2 pipeline: frame i+1 is submitted before frame i is collected
        tickets = [eng.submit(images[0])]
        got = []
        for im in images[1:]:
            tickets.append(eng.submit(im))
            got.append(eng.collect(tickets.pop(0)))
        got.append(eng.collect(tickets.pop(0)))
        # all in flight at once, collected newest first: no frame is lost or swapped
        ts = [eng.submit(im) for im in images]
        late = [eng.collect(t) for t in reversed(ts)][::-1]
        # the blocking path of the same engine
        one = eng.infer(images[2])
    for g, w in zip(got, want):
        assert_same(g, w)
    for g, w in zip(late, want):
        assert_same(g, w)
    assert_same(one, want[2])
    assert not (want[0]['depth'] == want[1]['depth']).all()     # the frames do differ


@pytest.mark.parametrize('name', ['cq0_lazy', 'cq1_lazy'])
def test_each_missing_event_is_caught_by_a_schedule(ttnn, da3_tiny_sd, schedule, name,
                                                    monkeypatch):
    """Drop one of the two cross-queue waits: that schedule returns a wrong frame.

    The test above is only as strong as this.
    """
    images = frames(3)
    want = reference(da3_tiny_sd, images)
    schedule(name)
    real_wait = ttnn.wait_for_event
    dropped = 1 if name == 'cq0_lazy' else 0     # CQ1 waiting on CQ0 / CQ0 waiting on CQ1

    def wait(cq_id=None, mesh_event=None):
        if cq_id != dropped:
            real_wait(cq_id, mesh_event)
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2) as eng:
        eng.prepare(SHAPE)
        monkeypatch.setattr(ttnn, 'wait_for_event', wait)
        ts = [eng.submit(im) for im in images]
        got = [eng.collect(t) for t in ts]
    wrong = [i for i, (g, w) in enumerate(zip(got, want))
             if not np.array_equal(g['depth'], w['depth'])]
    assert wrong, f'dropping CQ{dropped}\'s wait went unnoticed under {name}'


def test_shutdown_with_a_trace_in_flight(ttnn, da3_tiny_sd, schedule):
    images = frames(2)
    want = reference(da3_tiny_sd, images)
    schedule('cq0_lazy')          # the trace queue has run nothing when close() is called
    eng = build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2)
    eng.prepare(SHAPE)
    ts = [eng.submit(im) for im in images]
    dev = eng.ctx.device
    assert dev._queues.busy()
    eng.close()                   # synchronizes, then releases traces and buffers
    assert not dev._is_open
    for t, w in zip(ts, want):    # the frames in flight completed and stay collectable
        assert_same(eng.collect(t), w)
    with pytest.raises(RuntimeError, match='already collected'):
        eng.collect(ts[0])
    with pytest.raises(RuntimeError, match='closed'):
        eng.submit(images[0])


def test_a_new_shape_while_frames_are_in_flight(ttnn, da3_tiny_sd, schedule):
    """Re-preparing releases every trace: the frames in flight finish first."""
    images = frames(1) + frames(1, shape=(42, 28), seed=1)
    schedule('cq0_lazy')
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd) as eng:
        eng.prepare(SHAPE)
        eng.prepare((42, 28))
        want = [eng.infer(im) for im in images]
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2) as eng:
        eng.prepare(SHAPE)
        first = eng.submit(images[0])
        second = eng.submit(images[1])          # prepares (42, 28): recaptures every trace
        assert_same(eng.collect(second), want[1])
        assert_same(eng.collect(first), want[0])


def test_a_kept_shape_after_an_eviction(ttnn, da3_tiny_sd, schedule):
    """An eviction clears the program cache: a kept shape's per-frame copy compiles again too.

    It must, before the traces exist: a compile while one exists lands where a replay writes.
    """
    shapes = [SHAPE, (42, 28), (28, 28)]
    images = [frames(1, shape=hw, seed=i)[0] for i, hw in enumerate(shapes)]
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd) as eng:
        want = [eng.infer(im) for im in images]
    schedule('cq0_lazy')
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2,
                           max_traced_shapes=2) as eng:
        for im in images[:2]:
            eng.collect(eng.submit(im))
        third = eng.submit(images[2])           # evicts SHAPE, keeps (42, 28)
        kept = eng.submit(images[1])
        assert_same(eng.collect(third), want[2])
        assert_same(eng.collect(kept), want[1])
        assert eng.info.details['shapes'] == [list(shapes[2]), list(shapes[1])]   # LRU first


def test_camera_frames_through_the_pipeline(ttnn, da3_tiny_sd, schedule):
    cam = frames(3, shape=(30, 40), seed=2)
    rmap = resize_map((30, 40), SHAPE, None)
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd) as eng:
        want = [eng.infer_camera(im, rmap) for im in cam]
    schedule('cq1_lazy')
    with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=2) as eng:
        ts = [eng.submit(im, resize=rmap) for im in cam]
        got = [eng.collect(t) for t in ts]
    for g, w in zip(got, want):
        assert_same(g, w)


def test_bad_queue_count(ttnn, da3_tiny_sd):
    with pytest.raises(ValueError, match='command_queues'):
        build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd, command_queues=3)
