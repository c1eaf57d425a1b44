"""Replay and record: raw CDR survives a live round trip; pacing, remap, loops and /clock work."""
import numpy as np
import pytest
from rosbags.rosbag2 import Reader

from support.procs import python_cmd, spawn, wait_for
from tt_depth_ros.tools.bag import io as bag_io
from tt_depth_ros.tools.bag import replay
from tt_depth_ros.tools.bag import sample as sample_bag
from tt_depth_ros.tools.bag.record import parse_topic_specs

FRAMES, LOOPS, RATE_HZ = 10, 3, 20.0


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp('replay') / 'sample'
    sample_bag.generate(path, sample_bag.SampleBagConfig(width=64, height=48, frames=FRAMES))
    return path


def test_frames_group_and_default_topic(bag):
    msgs, types = bag_io.read_bag(bag)
    topic = replay.default_frame_topic(msgs, types)
    assert topic == '/camera/image_raw'
    frames = replay.group_frames(msgs, topic)
    assert len(frames) == FRAMES and all(f[-1].topic == topic for f in frames)
    assert sum(len(f) for f in frames) == len(msgs) == FRAMES * len(sample_bag.TOPICS)
    with pytest.raises(ValueError, match='not in bag'):
        bag_io.read_bag(bag, ['/nope'])


def test_restamp_only_touches_the_stamp(bag):
    msgs, _ = bag_io.read_bag(bag, ['/camera/camera_info'])
    raw = msgs[0].raw
    stamp = bag_io.header_stamp_ns(raw)
    assert stamp == msgs[0].timestamp_ns            # sample bag: header stamp == bag time
    new = bag_io.restamp(raw, stamp + 3_250_000_123)
    assert bag_io.header_stamp_ns(new) == stamp + 3_250_000_123
    assert len(new) == len(raw) and new[:4] == raw[:4] and new[12:] == raw[12:]
    assert bag_io.has_header('sensor_msgs/msg/Image')
    assert not bag_io.has_header('rosgraph_msgs/msg/Clock')


def test_cli_parsers():
    assert replay.parse_remap(['/a:=/b']) == {'/a': '/b'}
    with pytest.raises(ValueError, match='from:=to'):
        replay.parse_remap(['/a'])
    assert parse_topic_specs(['/a', '/b:std_msgs/msg/String']) == {
        '/a': None, '/b': 'std_msgs/msg/String'}


def _same_payload(received: bytes, sent: bytes) -> bool:
    """Byte-identical, except the DDS transport pads a payload with zeros to a 4-byte multiple."""
    return received == sent + b'\x00' * (-len(sent) % 4)


def _recorded(path):
    out = {}
    with Reader(path) as r:
        for c, t, raw in r.messages():
            out.setdefault(c.topic, []).append((t, bytes(raw)))
    return out


@pytest.mark.ros
@pytest.mark.serial   # rate, loop and clock timing: a loaded recorder can miss a frame
def test_round_trip_bytes_rate_remap_loops_clock(bag, tmp_path):
    out = tmp_path / 'recorded'
    count = FRAMES * LOOPS
    rec_cmd = python_cmd('tt_depth_ros.tools.bag.record', str(out), '--loopback', '--count',
                         str(count), '--duration', '30', '--topic',
                         '/camera/image_raw:sensor_msgs/msg/Image',
                         '/cam/info:sensor_msgs/msg/CameraInfo',
                         '/camera/pose_gt:geometry_msgs/msg/PoseStamped',
                         '/clock:rosgraph_msgs/msg/Clock')
    play_cmd = python_cmd('tt_depth_ros.tools.bag.replay', str(bag), '--loopback', '--rate-hz',
                          str(RATE_HZ),
                          '--loops', str(LOOPS), '--clock', '--wait-subscribers', '1', '--wait-all',
                          '--remap', '/camera/camera_info:=/cam/info',
                          '--topics', '/camera/image_raw', '/camera/camera_info',
                          '/camera/pose_gt')
    with spawn(rec_cmd, name='record') as rec:
        wait_for(lambda: 'recording' in rec.log_text(), 20, what='recorder ready')
        with spawn(play_cmd, name='replay') as play:
            play.wait(60)
            assert play.returncode == 0, play.log_text()
        rec.wait(30)
        assert rec.returncode == 0, rec.log_text()

    got = _recorded(out)
    src, _ = bag_io.read_bag(bag)
    by_topic = {}
    for m in src:
        by_topic.setdefault(m.topic, []).append(m.raw)
    msgs, _ = bag_io.read_bag(bag, ['/camera/image_raw'])
    first, last = msgs[0].timestamp_ns, msgs[-1].timestamp_ns
    span = last - first + (last - first) // (FRAMES - 1)   # the player's loop shift
    for bag_topic, live in [('/camera/image_raw', '/camera/image_raw'),
                            ('/camera/camera_info', '/cam/info'),
                            ('/camera/pose_gt', '/camera/pose_gt')]:
        payloads = [raw for _, raw in got[live]]
        assert len(payloads) == count, f'{live}: {len(payloads)} of {count}'
        originals = by_topic[bag_topic]
        for raw, orig in zip(payloads[:FRAMES], originals):   # first pass: byte-identical
            assert _same_payload(raw, orig), live
        for k in range(1, LOOPS):                       # later passes: only the stamp moves
            for raw, orig in zip(payloads[k * FRAMES:(k + 1) * FRAMES], originals):
                moved = bag_io.restamp(orig, bag_io.header_stamp_ns(orig) + k * span)
                assert _same_payload(raw, moved), live

    # Rate from the recorder's receive times: slope of a line fit (robust to one late message).
    t = np.array([ts for ts, _ in got['/camera/image_raw']], dtype=np.float64) / 1e9
    slope = np.polyfit(np.arange(len(t)), t, 1)[0]
    rate = 1.0 / slope
    print(f'requested {RATE_HZ} Hz, received {rate:.2f} Hz')
    assert abs(rate - RATE_HZ) / RATE_HZ < 0.05

    clock = [int.from_bytes(raw[4:8], 'little') * 10**9 + int.from_bytes(raw[8:12], 'little')
             for _, raw in got['/clock']]
    assert len(clock) >= count and clock == sorted(clock)   # monotonic across loops
    assert clock[-1] == bag_io.header_stamp_ns(by_topic['/camera/image_raw'][-1]) \
        + (LOOPS - 1) * span


def test_sqlite3_bag_reads_like_mcap(bag, tmp_path):
    cfg = sample_bag.SampleBagConfig(width=64, height=48, frames=FRAMES, storage='sqlite3')
    sample_bag.generate(tmp_path / 'db', cfg)
    a, ta = bag_io.read_bag(bag)
    b, tb = bag_io.read_bag(tmp_path / 'db')
    assert ta == tb and [(m.topic, m.timestamp_ns, m.raw) for m in a] == \
        [(m.topic, m.timestamp_ns, m.raw) for m in b]
