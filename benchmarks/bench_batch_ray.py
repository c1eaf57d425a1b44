"""tt-depth-batch throughput: 1 vs 2 local workers vs a local Ray cluster; printed, not asserted.

The tiny DA3 model (tests' random tiny weights, torch-cpu, one torch thread per worker) over
generated sample bags (two cameras each), each case a `tt-depth-batch --force` run as a user
starts it. "run" is frames out / the command's wall time (process and engine start included),
"in bags" is frames out / the summed per-bag wall times of the manifests (steady state, summed
over workers: 2 workers at full speed show 2x the per-worker rate in "run" only). The Ray cluster
(the machine's CPUs, no dashboard, usage statistics and metrics off) is started before its run;
the Ray overhead per frame is (Ray wall - 2-worker wall) / frames.

    PYTHONPATH=test .venv/bin/python -m benchmarks.bench_batch_ray [bags] [frames per camera]

test/ on PYTHONPATH: the tiny weights and the batch runner are the tests' (support.*). Run it in a
loopback-only network namespace as the tests do (`PYTHONPATH=test unshare -n sh -c 'ip link set
lo up && exec "$0" "$@"' .venv/bin/python -m benchmarks.bench_batch_ray`): a Ray node binds the
machine's address when there is one.
"""
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import require_test_helpers

require_test_helpers('bench_batch_ray')
from support.batch_runs import PARAMS, run_batch, write_params_file  # noqa: E402
from support.da3_fixtures import tiny_state_dict, write_safetensors  # noqa: E402
from tt_depth_ros.tools.bag import sample as sample_bag  # noqa: E402

RAY_ENV = {'RAY_USAGE_STATS_ENABLED': '0', 'RAY_enable_metrics_collection': '0',
           'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN': secrets.token_hex(32)}


def case(label: str, bags: Path, yaml: Path, out: Path, *args: str) -> dict:
    t0 = time.monotonic()
    proc = run_batch(bags, '--params', yaml, '--out', out, '--torch-threads', '1', '--force',
                     *args, timeout=1800)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f'{label}: exit {proc.returncode}\n{proc.stderr[-3000:]}')
    docs = [json.loads(p.read_text()) for p in sorted(out.glob('*.manifest.json'))]
    frames = sum(d['frames']['out'] for d in docs)
    in_bags = sum(d['timings']['wall_s'] for d in docs)
    return {'label': label, 'frames': frames, 'wall': wall, 'run_fps': frames / wall,
            'bag_fps': frames / in_bags}


def main() -> None:
    n_bags = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    root = Path(tempfile.mkdtemp(prefix='bench-batch-'))
    temp = tempfile.mkdtemp(prefix='ttray-')
    os.environ.update(RAY_ENV)
    try:
        weights = write_safetensors(tiny_state_dict(), root / 'tiny.safetensors')
        yaml = write_params_file(root / 'depth.yaml', dict(PARAMS, weights_path=str(weights)))
        for i in range(n_bags):
            sample_bag.generate(root / 'bags' / f'bag_{i}', sample_bag.SampleBagConfig(
                width=256, height=192, frames=frames, step_m=0.05 * (i + 1)))
        rows = [case('local, 1 worker', root / 'bags', yaml, root / 'w1'),
                case('local, 2 workers', root / 'bags', yaml, root / 'w2', '--workers', '2')]
        import ray  # after RAY_AUTH_*: Ray reads them at import
        t0 = time.monotonic()
        ray.init(address='local', num_cpus=os.cpu_count(), include_dashboard=False,
                 log_to_driver=False, object_store_memory=128 << 20,
                 _node_ip_address='127.0.0.1', _temp_dir=temp)
        start = time.monotonic() - t0
        try:
            address = ray.get_runtime_context().gcs_address
            rows.append(case(f'Ray, {os.cpu_count()} actors', root / 'bags', yaml, root / 'ray',
                             '--ray', address))
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(temp, ignore_errors=True)
    print(f'tt-depth-batch, da3metric-tiny torch-cpu, {n_bags} bags x 2 cameras x {frames} '
          f'frames of 256x192, {os.cpu_count()} CPUs')
    print(f'{"case":<18} {"frames":>6} {"wall s":>7} {"run f/s":>8} {"in bags f/s":>12}')
    for r in rows:
        print(f'{r["label"]:<18} {r["frames"]:>6} {r["wall"]:>7.1f} {r["run_fps"]:>8.1f} '
              f'{r["bag_fps"]:>12.1f}')
    overhead = (rows[2]['wall'] - rows[1]['wall']) / rows[2]['frames'] * 1e3
    print(f'Ray cluster start {start:.1f} s (not in its run); Ray vs 2 local workers: '
          f'{overhead:+.1f} ms per frame')


if __name__ == '__main__':
    main()
