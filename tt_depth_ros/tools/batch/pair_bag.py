"""One rosbag2 through the pair node's work, offline: its poses, TF, clouds, depth into a new MCAP.

Nothing here re-implements the node: `pair_work` (ros/pair/node.py) builds the node's pipeline,
publishing rules and mode (stereo pairing by stamp, or the temporal keyframe chain) on an offline
host of the node's interface (tools/batch/pair_host.py); the bag's messages are delivered to the
mode's subscriptions in bag order and every pair (stereo) or frame (temporal) it offers is
processed, as a replay paced by the node's output would be. What the node publishes is written,
stamped as the node stamps it, at the bag time of the image that completed the item.

Cameras: stereo takes two (camera 1, the reference, first; its namespace is the node's, where
the outputs go: `/camera/pose`, `/camera/points`, ..., and `/tf`); temporal runs one node per
camera, each in its camera's namespace. The node's worker waits for a CameraInfo (and, with
scale_source 'depth', the metric depth) that arrives after its image; offline that wait is a
look-ahead in bag time, as in tools/batch/depth_bag.py.
"""
from __future__ import annotations

import posixpath
import time
from collections import Counter, deque
from pathlib import Path

from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image

from tt_depth_ros.pipelines.depth import engine_kind
from tt_depth_ros.ros.pair.figures import PairFigures
from tt_depth_ros.ros.pair.node import pair_work
from tt_depth_ros.ros.pair.params import PairParams, check_pair_kind
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import TOPIC as METRIC_DEPTH
from tt_depth_ros.ros.runtime.inputs.metric_depth_input import MetricDepthImages
from tt_depth_ros.tools.bag.io import default_typestore_distro, zero_padded_cdr
from tt_depth_ros.tools.bag.sample import typestore_for
from tt_depth_ros.tools.batch.cameras import Camera, CameraTopicError
from tt_depth_ros.tools.batch.depth_bag import BagFailed, _hint, msgtype_of
from tt_depth_ros.tools.batch.offline_log import OfflineLogger
from tt_depth_ros.tools.batch.pair_host import OfflinePairHost


def pair_nodes(cameras: list[Camera], p: PairParams) -> list[tuple[str, dict, list[Camera]]]:
    """The pair nodes a bag's cameras make: [(namespace, input remaps, cameras)].

    Raises:
        CameraTopicError: stereo without exactly two cameras.
    """
    suffix = '/compressed' if p.input_transport == 'compressed' else ''
    if p.mode == 'stereo':
        if len(cameras) != 2:
            raise CameraTopicError(
                f"mode 'stereo' pairs two cameras, got {len(cameras)} "
                f"({[c.image for c in cameras]}); pass --camera twice, camera 1 (the reference, "
                "whose namespace gets the outputs) first, or use mode 'temporal'")
        ns = cameras[0].ns
        remap = {}
        for i, cam in enumerate(cameras, 1):
            remap[posixpath.join(ns, f'camera{i}/image{suffix}')] = cam.image
            remap[posixpath.join(ns, f'camera{i}/camera_info')] = cam.camera_info
        return [(ns, remap, list(cameras))]
    return [(cam.ns, {posixpath.join(cam.ns, f'image{suffix}'): cam.image,
                      posixpath.join(cam.ns, 'camera_info'): cam.camera_info}, [cam])
            for cam in cameras]


class _NodeRun:
    """One offline pair node of a bag: its host, its mode and its counters."""

    def __init__(self, p: PairParams, engine, ns: str, remap: dict, cams: list[Camera], sink,
                 logger: OfflineLogger) -> None:
        self.cams, self.frames_in, self.frames_out = cams, 0, 0
        self.host = OfflinePairHost(p, engine, ns, remap, sink, logger)
        metric = MetricDepthImages()
        work = pair_work(self.host, engine, PairFigures(),
                         lambda stamp_ns, wait=True: metric.image_for(stamp_ns))
        self.mode, self.outputs = work.mode, work.outputs
        self.mode.create_inputs()
        self.outputs.restart()
        if p.scale_source == 'depth':
            self.host.subscribe(Image, METRIC_DEPTH, lambda msg: self._on_metric(metric, msg))

    def _on_metric(self, metric: MetricDepthImages, msg) -> None:
        error = metric.put(msg)
        if error is not None:
            self.host.reject('metric_depth', error)

    def summary(self) -> dict:
        out = {'ns': self.host.ns, 'mode': self.host.params.mode,
               'cameras': [{'image': c.image, 'camera_info': c.camera_info} for c in self.cams],
               'frames_in': self.frames_in, 'frames_out': self.frames_out,
               'skipped': dict(sorted(self.host.skipped.items()))}
        if hasattr(self.mode, 'pairer'):
            st = self.mode.pairer.stats
            out['pairs'], out['unpaired'] = st.pairs, list(st.unpaired)
        return out


class PairBagJob:
    """Run one bag's cameras through a built pair engine (DUSt3R or DA3 any-view) and write.

    Args:
        engine: the engine (built once per process from the node's parameters).
        p: the pair node's parameter values.
        logger: where the node's log lines go (prefixed with the bag).
    """

    def __init__(self, engine, p: PairParams, logger) -> None:
        errors = check_pair_kind(p, engine_kind(engine.info.details))   # the node's configure
        if errors:
            raise BagFailed(f"the pair node would not configure with this engine: "
                            f"{'; '.join(errors)}; fix the parameter file")
        self.engine, self.p = engine, p
        self.log = logger
        self.stages: Counter = Counter()

    def run(self, bag: Path, cameras: list[Camera], out: Path) -> dict:
        """Read `bag`, write the node's outputs into the new MCAP bag `out`; frame counts.

        Raises:
            BagFailed: an input topic missing, nothing produced.
            Exception: whatever the bag library raises for a corrupt or truncated bag.
        """
        from rosbags.rosbag2 import Reader, StoragePlugin, Writer

        p = self.p
        lookahead_ns = int(1e9 * max(
            p.camera_info_wait_s if p.camera_info_sync == 'exact' else 0.0,
            p.metric_depth_wait_s if p.scale_source == 'depth' else 0.0))
        ts = typestore_for(default_typestore_distro())
        counts: Counter = Counter()
        with Reader(bag) as reader, Writer(out, version=9,
                                           storage_plugin=StoragePlugin.MCAP) as writer:
            types = {c.topic: c.msgtype for c in reader.connections}
            conns: dict = {}
            now = {'t': 0}

            def sink(topic: str, cls, msg) -> None:
                if topic not in conns:
                    conns[topic] = writer.add_connection(topic, msgtype_of(cls), typestore=ts)
                conn = conns[topic]
                writer.write(conn, now['t'], zero_padded_cdr(serialize_message(msg),
                                                             conn.msgtype, ts))
                counts[topic] += 1

            runs = [_NodeRun(p, self.engine, ns, remap, cams, sink, self.log)
                    for ns, remap, cams in pair_nodes(cameras, p)]
            self.log.info('nodes: ' + '; '.join(
                f"{r.host.ns} ({p.mode}: {', '.join(c.image for c in r.cams)})"
                for r in runs))
            routes: dict = {}
            for run in runs:
                for sub in run.host.subscriptions:
                    if sub.topic not in types:
                        if sub.topic.endswith('/' + METRIC_DEPTH) or sub.image:
                            raise BagFailed(f'{sub.topic} (the pair node input for '
                                            f"scale_source={p.scale_source!r}) is not in "
                                            f'the bag; it has {sorted(types)}')
                        continue   # e.g. /tf_static of a bag without static transforms
                    routes.setdefault(sub.topic, []).append((run, sub))
            pending: deque = deque()   # images read, waiting for the look-ahead

            def flush(before_ns: int | None) -> None:
                while pending and (before_ns is None or pending[0][0] + lookahead_ns < before_ns):
                    t, run, sub, raw = pending.popleft()
                    now['t'] = t
                    run.frames_in += 1
                    sub.callback(deserialize_message(raw, sub.msg_type))
                    self._process_offered(run)

            wanted = [c for c in reader.connections if c.topic in routes]
            for conn, t, raw in reader.messages(connections=wanted):
                flush(t)
                for run, sub in routes[conn.topic]:
                    if sub.image:
                        pending.append((t, run, sub, bytes(raw)))
                    else:
                        sub.callback(deserialize_message(bytes(raw), sub.msg_type))
            flush(None)
        nodes = [r.summary() for r in runs]
        skipped = sum((Counter(n['skipped']) for n in nodes), Counter())
        result = {'cameras': nodes, 'frames_in': sum(n['frames_in'] for n in nodes),
                  'frames_out': sum(n['frames_out'] for n in nodes), 'skipped': dict(skipped),
                  'topics': dict(sorted(counts.items())), 'stages_s': dict(self.stages)}
        if result['frames_out'] == 0:
            raise BagFailed(f'no output produced ({result["frames_in"]} images read, skipped: '
                            f'{result["skipped"] or "none"}); {_hint(result["skipped"])}', result)
        return result

    def _process_offered(self, run: _NodeRun) -> None:
        """The node worker's `process` for each item the mode offered (none is dropped)."""
        items, run.host.offered = run.host.offered, []
        for item in items:
            t0 = time.perf_counter()
            try:
                published = run.mode.process(item)
            except Exception as exc:  # noqa: BLE001 - the node's worker counts it and goes on
                run.host.reject('processing', f'{type(exc).__name__}: {exc}')
                continue
            if published is not None:
                run.frames_out += 1
                self.stages.update({**published.stages, 'total': time.perf_counter() - t0})
