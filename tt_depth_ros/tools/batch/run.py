"""`tt-depth-batch`: run a depth or pair node's work over many rosbag2, offline, one MCAP per bag.

    tt-depth-batch /data/bags/ 'more/*.mcap.d' --params config/depth.yaml --out depth_out/ \
        --camera image=/front/image_raw,camera_info=/front/camera_info --workers 2

Per input bag `NAME`: `OUT/NAME` (an MCAP rosbag2 with the topics the node of the parameter file
would publish (depth_bag.py, pair_bag.py), under the camera's namespace, header stamps of the
source images) and
`OUT/NAME.manifest.json` (frames in/out, skipped frames by the node's reject reasons, timings,
model, weights and parameter hashes, software versions, status ok/failed and why). A bag that
fails (not a bag, corrupt or truncated, missing topics, no frame produced, a foreign file where
its output goes) is recorded as failed and the run goes on; the exit code is 1 when any failed.
A re-run skips bags whose manifest matches the same input, parameters and weights (`--force`
redoes them). Locally: in-process (`--workers 1`) or a process pool, one engine per process;
with `--ray auto|local|ADDRESS` (or RAY_ADDRESS set): one Ray actor per engine over a cluster
(ray_runner.py), the same per-bag code, so the same outputs and manifests.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import logging
import multiprocessing
import os
import sys
import time
from pathlib import Path

from tt_depth_ros.tools.batch import manifest as mf
from tt_depth_ros.tools.batch import ray_runner
from tt_depth_ros.tools.batch.bag_job import Settings, process_bag, setup_logging
from tt_depth_ros.tools.batch.cameras import parse_camera
from tt_depth_ros.tools.batch.params_file import ParamsFileError, load_node_params
from tt_depth_ros.tools.batch.progress import Progress

LOG = logging.getLogger('tt_depth_batch')


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


_SETTINGS: Settings | None = None


def _worker_init(settings: Settings) -> None:
    global _SETTINGS
    setup_logging()
    if settings.threads:
        os.environ['OMP_NUM_THREADS'] = str(settings.threads)   # before torch is imported
    _SETTINGS = settings


def _worker_bag(bag: Path) -> dict:
    return process_bag(bag, _SETTINGS)


def summary_table(rows: list[dict]) -> str:
    """The final table: one line per bag."""
    head = ('bag', 'status', 'frames out/in', 'seconds', 'reason')
    lines = [(r['bag'], r['status'], f"{r['frames_out']}/{r['frames_in']}", f"{r['seconds']:.1f}",
              r['reason'][:100]) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = '  '.join(f'{{:<{w}}}' for w in widths)
    return '\n'.join([fmt.format(*head), fmt.format(*('-' * w for w in widths))]
                     + [fmt.format(*line) for line in lines])


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('inputs', nargs='+', help='rosbag2 directories, directories of them, globs')
    ap.add_argument('--out', type=Path, required=True, help='output directory')
    ap.add_argument('--params', type=Path, help="the depth or pair node's parameter file "
                    '(config/depth.yaml, config/pair.yaml: the node is told by its parameters); '
                    "default: the depth node's defaults")
    ap.add_argument('--camera', action='append', default=[],
                    metavar='image=TOPIC,camera_info=TOPIC[,ns=NS]',
                    help='a camera (repeatable); default: every image_raw/image topic with a '
                    'camera_info beside it')
    ap.add_argument('--workers', type=int, default=None,
                    help='local processes, one engine each (default 1); with --ray: Ray actors '
                    "(default: as many as the cluster's resources fit, at most one per bag)")
    ap.add_argument('--force', action='store_true', help='redo bags that are up to date')
    ap.add_argument('--torch-threads', type=int, default=0,
                    help="torch CPU threads per process (OMP_NUM_THREADS); 0 = torch's default, "
                    "as in the node (with --ray: 1, the CPUs each actor asks for). Another count "
                    "changes float summation order: the depth then differs from the node's in "
                    "the last bits")
    ray = ap.add_argument_group("Ray (a cluster; pip install 'tt_depth_ros[ray]')")
    ray.add_argument('--ray', metavar='auto|local|ADDRESS',
                     help="run on Ray: 'auto' = the cluster this machine joined with `ray start`, "
                     "HOST:PORT = the cluster with that head, 'local' = a private one-machine "
                     'cluster for this run; default: RAY_ADDRESS when set, else local processes')
    ray.add_argument('--ray-num-gpus', type=float, default=None, metavar='N',
                     help='GPUs per actor (default 1 for backend torch-cuda, else 0)')
    ray.add_argument('--ray-resources', action='append', default=[], metavar='NAME=AMOUNT',
                     help='a custom resource per actor, as `ray start --resources` declares it '
                     '(repeatable; default tenstorrent=1 for backend ttnn)')
    ray.add_argument('--ray-retries', type=int, default=2, metavar='N',
                     help='attempts per bag after the first when its actor process died '
                     '(default 2)')
    return ap


def main(argv: list[str] | None = None) -> int:
    """Console entry point; exit 0 = every bag ok or up to date, 1 = some failed, 2 = usage."""
    a = _parser().parse_args(argv)
    setup_logging()
    address = a.ray or os.environ.get('RAY_ADDRESS') or None
    try:
        if (a.workers is not None and a.workers < 1) or a.torch_threads < 0 or a.ray_retries < 0:
            raise ValueError('--workers must be >= 1, --torch-threads and --ray-retries >= 0')
        if address is None and (a.ray_num_gpus is not None or a.ray_resources):
            raise ValueError('--ray-num-gpus and --ray-resources are for Ray actors: add --ray '
                             'auto|local|ADDRESS (or set RAY_ADDRESS)')
        resources = dict(ray_runner.parse_resource(r) for r in a.ray_resources)
        if address is not None:
            ray_runner.import_ray()
        node, params = load_node_params(a.params)
        if params.weights_path:   # every process and node opens the same file
            params = dataclasses.replace(params,
                                         weights_path=str(Path(params.weights_path).resolve()))
        cameras = [parse_camera(c) for c in a.camera]
        bags = [b.resolve() for b in expand_inputs(a.inputs)]
        weights = mf.weights_identity(params)
        if a.out.exists() and not a.out.is_dir():
            raise ValueError(f'--out {a.out} exists and is not a directory')
    except (ValueError, ParamsFileError, FileNotFoundError, ray_runner.RayUnavailable) as exc:
        print(f'tt-depth-batch: {exc}', file=sys.stderr)
        return 2
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings(params, cameras, out, a.force, a.torch_threads, weights, node)
    progress = Progress(len(bags))
    t0 = time.monotonic()
    try:
        if address is not None:
            LOG.info(f'{len(bags)} bag(s) -> {out} with {params.model} ({params.backend}), '
                     f'on Ray at {address!r}')
            opts = ray_runner.RayOptions(address, a.workers, a.ray_num_gpus, resources,
                                         a.ray_retries)
            try:
                rows = ray_runner.run_on_ray(bags, settings, opts, progress)
            except ray_runner.RayUnavailable as exc:
                print(f'tt-depth-batch: {exc}', file=sys.stderr)
                return 2
        else:
            rows = _run_local(bags, settings, min(a.workers or 1, len(bags)), progress)
    finally:
        progress.close()
    print(summary_table(rows))
    failed = sum(r['status'] == 'failed' for r in rows)
    frames = sum(r['frames_out'] for r in rows)
    print(f'{len(rows)} bag(s): {len(rows) - failed} ok or up to date, {failed} failed; '
          f'{frames} frames out in {time.monotonic() - t0:.1f} s')
    return 1 if failed else 0


def _run_local(bags: list[Path], settings: Settings, workers: int, progress: Progress) -> list:
    """In this process (one worker) or a spawn pool, one engine per process; rows in order."""
    LOG.info(f'{len(bags)} bag(s) -> {settings.out} with {settings.params.model} '
             f'({settings.params.backend}), {workers} worker(s)')
    if settings.threads:
        os.environ['OMP_NUM_THREADS'] = str(settings.threads)   # torch is not imported yet
    rows = []
    if workers == 1:
        for bag in bags:
            rows.append(process_bag(bag, settings))
            progress.done(rows[-1])
        return rows
    ctx = multiprocessing.get_context('spawn')
    with ctx.Pool(workers, initializer=_worker_init, initargs=(settings,)) as pool:
        for row in pool.imap(_worker_bag, bags):
            rows.append(row)
            progress.done(row)
    return rows


if __name__ == '__main__':
    raise SystemExit(main())
