"""One bag's job, the same in every runner: skip it when up to date, else process it, and manifest.

`process_bag` is what the local runner (run.py: in-process or a process pool) and the Ray runner
(ray_runner.py: one actor per engine) call for each bag, so they write the same outputs and
manifests; `Settings` is what every bag of a run shares (pickled to the workers and actors);
the engine is built once per process, on its first bag to process.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tt_depth_ros.tools.bag.io import bag_sha256
from tt_depth_ros.tools.batch import manifest as mf
from tt_depth_ros.tools.batch.cameras import Camera

if TYPE_CHECKING:   # the node packages import rclpy: only where a job runs
    from tt_depth_ros.ros.depth.params import DepthParams
    from tt_depth_ros.ros.pair.params import PairParams

LOG = logging.getLogger('tt_depth_batch')


@dataclass
class Settings:
    """What every bag of a run shares (pickled to the pool processes and the Ray actors)."""

    params: DepthParams | PairParams
    cameras: list[Camera]      # empty = each bag's default cameras
    out: Path
    force: bool = False
    threads: int = 0           # torch threads per process; 0 = torch's default (the node's)
    weights: dict = field(default_factory=dict)
    node: str = 'depth'        # whose parameters and work: 'depth' or 'pair' (params_file.py)


class _Engine:
    """The process's one engine, built on first use (a run of skipped bags builds none)."""

    engine = None
    error: str | None = None

    @classmethod
    def get(cls, p, node: str = 'depth'):
        from tt_depth_ros.engines.cancel import CancelToken
        from tt_depth_ros.ros.runtime.engine_builder import build_node_engine
        from tt_depth_ros.tools.batch.depth_bag import NodeLogger

        if cls.engine is None and cls.error is None:
            views = None
            if node == 'pair':   # the node's own choice of views per forward
                from tt_depth_ros.ros.pair.params import pair_engine_views
                views = pair_engine_views(p)
            try:
                # a batch run is throughput-bound: on ttnn, frames pipeline over two queues
                cls.engine = build_node_engine(p, NodeLogger('engine: '), CancelToken(), views,
                                               ttnn_command_queues=2)
            except Exception as exc:  # noqa: BLE001 - every bag is then failed with this reason
                cls.error = f'engine for {p.model!r} could not be built: {exc}'
        return cls.engine


def _not_a_bag(bag: Path) -> str | None:
    if not bag.exists():
        return f'{bag} does not exist'
    if not (bag.is_dir() and (bag / 'metadata.yaml').is_file()):
        return (f'{bag} is not a rosbag2 (a directory with metadata.yaml and its sqlite3 or '
                'MCAP files); give bag directories, or directories holding them')
    return None


def process_bag(bag: Path, s: Settings, execution: dict | None = None) -> dict:
    """One bag: skipped when up to date, else processed; leaves a manifest (or says why not).

    `execution` (where it ran: the Ray actor and node) goes into the manifest as it is.
    """
    from tt_depth_ros.tools.batch.cameras import CameraTopicError
    from tt_depth_ros.tools.batch.depth_bag import BagFailed, DepthBagJob, NodeLogger, bag_cameras

    name = bag.name
    out_bag = s.out / name
    partial = s.out / (name + mf.PARTIAL_SUFFIX)
    manifest_path = s.out / (name + mf.MANIFEST_SUFFIX)
    old = mf.read_manifest(manifest_path)
    params_sha = mf.canonical_sha256(s.params.as_dict())
    doc = {'tool': mf.TOOL, 'input': {'path': str(bag.resolve())}, 'output': {'path': name},
           'node': s.node, 'model': s.params.model, 'backend': s.params.backend,
           'weights': s.weights,
           'params_sha256': params_sha, 'params': s.params.as_dict(), 'software': mf.software(),
           'started': mf.now_iso(), 'status': 'failed', 'reason': None,
           'frames': {'in': 0, 'out': 0, 'skipped': {}},
           'execution': execution or {'runner': 'local', 'pid': os.getpid()}}
    t0 = time.monotonic()
    log = NodeLogger(f'{name}: ')
    try:
        if manifest_path.exists() and old is None:
            doc['manifest_written'] = False
            raise BagFailed(f'{manifest_path} exists and is not a tt-depth-batch manifest; move it '
                            'away or choose another --out')
        why = _not_a_bag(bag)
        if why:
            raise BagFailed(why)
        doc['input']['sha256'] = bag_sha256(bag)
        cams = [vars(c) for c in s.cameras] or 'default'
        doc['fingerprint'] = mf.fingerprint(doc['input']['sha256'], params_sha, s.weights, cams,
                                            doc['software'])
        ours = old is not None and old.get('output', {}).get('path') == name
        if out_bag.exists() and not ours:
            raise BagFailed(f'{out_bag} exists and was not written by tt-depth-batch (no '
                            f'{manifest_path.name} naming it); move it away or choose another '
                            '--out')
        if (not s.force and ours and old.get('status') == 'ok' and out_bag.is_dir()
                and old.get('fingerprint') == doc['fingerprint']):
            LOG.info(f'{name}: up to date (same input, parameters and weights); --force redoes it')
            return {'bag': name, 'status': 'skipped', 'frames_in': old['frames']['in'],
                    'frames_out': old['frames']['out'], 'seconds': 0.0, 'reason': 'up to date'}
        for stale in (partial, out_bag if ours else None):
            if stale is not None and stale.exists():
                shutil.rmtree(stale)
        cameras = bag_cameras(bag, s.cameras, s.params.input_transport == 'compressed')
        if s.node == 'pair':
            from tt_depth_ros.tools.batch.pair_bag import PairBagJob, pair_nodes
            pair_nodes(cameras, s.params)   # stereo needs two cameras: before any engine
        engine = _Engine.get(s.params, s.node)
        if engine is None:
            raise BagFailed(_Engine.error)
        info = engine.info
        doc.update(model=info.model, backend=info.backend, device=info.device, dtype=info.dtype)
        LOG.info(f'{name}: processing')
        partial.mkdir()   # staging: the bag inside is named NAME, as its storage file
        job = (PairBagJob if s.node == 'pair' else DepthBagJob)(engine, s.params, log)
        result = job.run(bag, cameras, partial / name)
        os.replace(partial / name, out_bag)
        doc['status'] = 'ok'
    except CameraTopicError as exc:
        doc['reason'] = f'{bag}: {exc}'
        result = None
    except BagFailed as exc:
        doc['reason'] = str(exc.args[0])
        result = exc.args[1] if len(exc.args) > 1 else None
    except Exception as exc:  # noqa: BLE001 - a bag the library cannot read: recorded, run goes on
        doc['reason'] = (f'cannot read {bag}: {type(exc).__name__}: {exc}. The bag looks corrupt '
                         'or truncated: re-copy or re-record it (sqlite3: `ros2 bag reindex` '
                         'rebuilds a lost metadata.yaml)')
        result = None
    finally:
        if partial.exists():
            shutil.rmtree(partial)   # never leave a half-written output
    if result is not None:
        doc['frames'] = {'in': result['frames_in'], 'out': result['frames_out'],
                         'skipped': result['skipped']}
        doc['cameras'] = result['cameras']
        doc['output']['topics'] = result['topics']
        doc['timings'] = {'stages_s': result['stages_s']}
    wall = time.monotonic() - t0
    doc.setdefault('timings', {})['wall_s'] = round(wall, 3)
    if doc['frames']['out']:
        doc['timings']['frames_per_s'] = round(doc['frames']['out'] / wall, 3)
    doc['finished'] = mf.now_iso()
    if doc['status'] == 'failed':
        LOG.error(f'{name}: FAILED: {doc["reason"]}')
    else:
        LOG.info(f'{name}: ok, {doc["frames"]["out"]}/{doc["frames"]["in"]} frames in {wall:.1f} s')
    if doc.pop('manifest_written', True):
        mf.write_manifest(manifest_path, doc)
    return {'bag': name, 'status': doc['status'], 'frames_in': doc['frames']['in'],
            'frames_out': doc['frames']['out'], 'seconds': round(wall, 2),
            'reason': doc['reason'] or ''}


def setup_logging() -> None:
    """The batch log format (pid: which worker or actor said it) on stderr."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format='%(asctime)s [%(process)d] %(levelname)s %(message)s')
