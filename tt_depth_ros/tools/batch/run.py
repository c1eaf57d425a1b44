"""`tt-depth-batch`: run the depth node's work over many rosbag2, offline, one MCAP out per bag.

    tt-depth-batch /data/bags/ 'more/*.mcap.d' --params config/depth.yaml --out depth_out/ \
        --camera image=/front/image_raw,camera_info=/front/camera_info --workers 2

Per input bag `NAME`: `OUT/NAME` (an MCAP rosbag2 with the topics the depth node would publish,
under the camera's namespace, header stamps and bag times of the source images) and
`OUT/NAME.manifest.json` (frames in/out, skipped frames by the node's reject reasons, timings,
model, weights and parameter hashes, software versions, status ok/failed and why). A bag that
fails (not a bag, corrupt or truncated, missing topics, no frame produced, a foreign file where
its output goes) is recorded as failed and the run goes on; the exit code is 1 when any failed.
A re-run skips bags whose manifest matches the same input, parameters and weights (`--force`
redoes them). Locally: in-process (`--workers 1`) or a process pool, one engine per process.
"""
from __future__ import annotations

import argparse
import glob
import logging
import multiprocessing
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tt_depth_ros.tools.bag.io import bag_sha256
from tt_depth_ros.tools.batch import manifest as mf
from tt_depth_ros.tools.batch.cameras import Camera, parse_camera
from tt_depth_ros.tools.batch.params_file import ParamsFileError, load_depth_params

LOG = logging.getLogger('tt_depth_batch')


@dataclass
class Settings:
    """What every bag of a run shares (sent to the worker processes)."""

    params: dict
    cameras: list[Camera]      # empty = each bag's default cameras
    out: Path
    force: bool = False
    threads: int = 0           # torch threads per process; 0 = torch's default (the node's)
    weights: dict = field(default_factory=dict)


class _Engine:
    """The process's one engine, built on first use (a run of skipped bags builds none)."""

    engine = None
    error: str | None = None

    @classmethod
    def get(cls, p: dict):
        from tt_depth_ros.engines.cancel import CancelToken
        from tt_depth_ros.ros.runtime.engine_builder import build_node_engine
        from tt_depth_ros.tools.batch.depth_bag import NodeLogger

        if cls.engine is None and cls.error is None:
            try:
                cls.engine = build_node_engine(p, NodeLogger('engine: '), CancelToken())
            except Exception as exc:  # noqa: BLE001 - every bag is then failed with this reason
                cls.error = f'engine for {p["model"]!r} could not be built: {exc}'
        return cls.engine


def expand_inputs(items: list[str]) -> list[Path]:
    """Bag directories of paths, globs and directories of bags (one that holds none stays)."""
    out: list[Path] = []
    for item in items:
        matches = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not matches:
            raise ValueError(f'{item}: the pattern matches nothing')
        for m in matches:
            path = Path(m)
            if path.is_dir() and not (path / 'metadata.yaml').exists():
                bags = sorted(p.parent for p in path.rglob('metadata.yaml'))
                if bags:
                    out += bags
                    continue
            out.append(path)   # a bag, or something that is not one (failed in its manifest)
    seen, unique = set(), []
    for p in out:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    names: dict[str, Path] = {}
    for p in unique:
        if p.name in names:
            raise ValueError(f'two inputs are both named {p.name!r} ({names[p.name]}, {p}): '
                             'their outputs would collide; run them with different --out')
        names[p.name] = p
    return unique


def _not_a_bag(bag: Path) -> str | None:
    if not bag.exists():
        return f'{bag} does not exist'
    if not (bag.is_dir() and (bag / 'metadata.yaml').is_file()):
        return (f'{bag} is not a rosbag2 (a directory with metadata.yaml and its sqlite3 or '
                'MCAP files); give bag directories, or directories holding them')
    return None


def process_bag(bag: Path, s: Settings) -> dict:
    """One bag: skipped when up to date, else processed; leaves a manifest (or says why not)."""
    from tt_depth_ros.tools.batch.cameras import CameraTopicError
    from tt_depth_ros.tools.batch.depth_bag import BagFailed, DepthBagJob, NodeLogger, bag_cameras

    name = bag.name
    out_bag = s.out / name
    partial = s.out / (name + mf.PARTIAL_SUFFIX)
    manifest_path = s.out / (name + mf.MANIFEST_SUFFIX)
    old = mf.read_manifest(manifest_path)
    params_sha = mf.canonical_sha256(s.params)
    doc = {'tool': mf.TOOL, 'input': {'path': str(bag.resolve())}, 'output': {'path': name},
           'model': s.params['model'], 'backend': s.params['backend'], 'weights': s.weights,
           'params_sha256': params_sha, 'params': s.params, 'software': mf.software(),
           'started': mf.now_iso(), 'status': 'failed', 'reason': None,
           'frames': {'in': 0, 'out': 0, 'skipped': {}}}
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
        cameras = bag_cameras(bag, s.cameras, s.params['input_transport'] == 'compressed')
        engine = _Engine.get(s.params)
        if engine is None:
            raise BagFailed(_Engine.error)
        info = engine.info
        doc.update(model=info.model, backend=info.backend, device=info.device, dtype=info.dtype)
        LOG.info(f'{name}: processing')
        partial.mkdir()   # staging: the bag inside is named NAME, as its storage file
        result = DepthBagJob(engine, s.params, log).run(bag, cameras, partial / name)
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


_SETTINGS: Settings | None = None


def _worker_init(settings: Settings) -> None:
    global _SETTINGS
    _setup_logging()
    if settings.threads:
        os.environ['OMP_NUM_THREADS'] = str(settings.threads)   # before torch is imported
    _SETTINGS = settings


def _worker_bag(bag: Path) -> dict:
    return process_bag(bag, _SETTINGS)


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format='%(asctime)s [%(process)d] %(levelname)s %(message)s')


def summary_table(rows: list[dict]) -> str:
    """The final table: one line per bag."""
    head = ('bag', 'status', 'frames out/in', 'seconds', 'reason')
    lines = [(r['bag'], r['status'], f"{r['frames_out']}/{r['frames_in']}", f"{r['seconds']:.1f}",
              r['reason'][:100]) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = '  '.join(f'{{:<{w}}}' for w in widths)
    return '\n'.join([fmt.format(*head), fmt.format(*('-' * w for w in widths))]
                     + [fmt.format(*line) for line in lines])


def main(argv: list[str] | None = None) -> int:
    """Console entry point; exit 0 = every bag ok or up to date, 1 = some failed, 2 = usage."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('inputs', nargs='+', help='rosbag2 directories, directories of them, globs')
    ap.add_argument('--out', type=Path, required=True, help='output directory')
    ap.add_argument('--params', type=Path, help="the depth node's parameter file "
                    '(config/depth.yaml format); default: the node defaults')
    ap.add_argument('--camera', action='append', default=[],
                    metavar='image=TOPIC,camera_info=TOPIC[,ns=NS]',
                    help='a camera (repeatable); default: every image_raw/image topic with a '
                    'camera_info beside it')
    ap.add_argument('--workers', type=int, default=1, help='local processes (one engine each)')
    ap.add_argument('--force', action='store_true', help='redo bags that are up to date')
    ap.add_argument('--torch-threads', type=int, default=0,
                    help="torch CPU threads per process (OMP_NUM_THREADS); 0 = torch's default, "
                    "as in the node. Another count changes float summation order: the depth "
                    "then differs from the node's in the last bits")
    a = ap.parse_args(argv)
    _setup_logging()
    try:
        if a.workers < 1 or a.torch_threads < 0:
            raise ValueError('--workers must be >= 1 and --torch-threads >= 0')
        params = load_depth_params(a.params)
        cameras = [parse_camera(c) for c in a.camera]
        bags = expand_inputs(a.inputs)
        weights = mf.weights_identity(params)
        if a.out.exists() and not a.out.is_dir():
            raise ValueError(f'--out {a.out} exists and is not a directory')
    except (ValueError, ParamsFileError, FileNotFoundError) as exc:
        print(f'tt-depth-batch: {exc}', file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    workers = min(a.workers, len(bags))
    settings = Settings(params, cameras, a.out, a.force, a.torch_threads, weights)
    if a.torch_threads:
        os.environ['OMP_NUM_THREADS'] = str(a.torch_threads)   # torch is not imported yet
    LOG.info(f'{len(bags)} bag(s) -> {a.out} with {params["model"]} ({params["backend"]}), '
             f'{workers} worker(s)')
    t0 = time.monotonic()
    if workers == 1:
        rows = [process_bag(b, settings) for b in bags]
    else:
        ctx = multiprocessing.get_context('spawn')
        with ctx.Pool(workers, initializer=_worker_init, initargs=(settings,)) as pool:
            rows = list(pool.imap(_worker_bag, bags))
    print(summary_table(rows))
    failed = sum(r['status'] == 'failed' for r in rows)
    frames = sum(r['frames_out'] for r in rows)
    print(f'{len(rows)} bag(s): {len(rows) - failed} ok or up to date, {failed} failed; '
          f'{frames} frames out in {time.monotonic() - t0:.1f} s')
    return 1 if failed else 0


if __name__ == '__main__':
    raise SystemExit(main())
