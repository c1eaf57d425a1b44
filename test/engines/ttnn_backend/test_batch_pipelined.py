"""tt-depth-batch's depth job on a two-queue ttnn engine: frames pipelined, bytes unchanged.

The same generated bag goes through the depth job twice, with the ttnn engine (CPU stand-in) on
one command queue (a frame at a time) and on two (frame N+1 submitted before frame N's
messages are built), the stand-in's trace queue held back until forced (cq0_lazy). Every output
message must be byte-identical, in the same order and at the same bag times, which are those
of the images.
"""
from devtools.ttnn.standin import queues
from support.batch_runs import CFG, PARAMS, bag_messages
from tt_depth_ros.engines.ttnn import build_ttnn_engine
from tt_depth_ros.tools.bag import sample as sample_bag
from tt_depth_ros.tools.batch.depth_bag import DepthBagJob, NodeLogger, bag_cameras
from tt_depth_ros.tools.batch.params_file import load_depth_params


def test_two_queue_engine_pipelines_the_bag_with_the_same_bytes(ttnn, da3_tiny_sd, tmp_path):
    bag = tmp_path / 'bag'
    sample_bag.generate(bag, sample_bag.SampleBagConfig(**dict(CFG, frames=4)))
    p = load_depth_params(None, dict(PARAMS, backend='ttnn'))
    outs, results = {}, {}
    try:
        for cq in (1, 2):
            queues.set_queue_schedule('cq0_lazy' if cq == 2 else 'in_order')
            with build_ttnn_engine('da3metric-tiny', state_dict=da3_tiny_sd,
                                   command_queues=cq) as eng:
                job = DepthBagJob(eng, p, NodeLogger(f'cq{cq}: '))
                assert job.frames_in_flight() == cq and eng.pipelines == (cq == 2)
                results[cq] = job.run(bag, bag_cameras(bag, [], False), tmp_path / f'out{cq}')
            outs[cq] = bag_messages(tmp_path / f'out{cq}')
    finally:
        queues.set_queue_schedule('in_order')
    assert results[1]['frames_out'] == results[2]['frames_out'] == 2 * 4   # two cameras
    assert sorted(outs[1]) == sorted(outs[2])
    for topic in outs[1]:
        assert outs[1][topic] == outs[2][topic], topic
    # each output at its image's bag time (a pipelined frame is written after the next started)
    images = bag_messages(bag)
    for ns in ('/camera', '/camera_right'):
        want = [t for t, _ in images[f'{ns}/image_raw']]
        assert [t for t, _ in outs[2][f'{ns}/depth']] == want, ns
