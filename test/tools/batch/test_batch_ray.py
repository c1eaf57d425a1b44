"""tt-depth-batch --ray on a real local Ray cluster: the local outputs, a killed actor, resume.

One Ray cluster for the module, started in this process (`ray.init(address='local')`, 2 CPUs, no
dashboard, usage stats and metrics off, a token of its own instead of one in ~/.ray) inside the
loopback-only network namespace the test harness gives the suite: every socket Ray listens on
is checked to be on 127.0.0.0/8. The CLI runs as a user's would, a subprocess joining the cluster
with `--ray HOST:PORT`, over the generated bags of test_batch.py (MCAP, sqlite3, two cameras,
one truncated) and the tiny model. Its engine is the real tiny DA3 engine through a plugin that
SIGKILLs its actor's process once, mid-bag (support/fake_engines/dies_once.py); the local run
uses the same parameters (the plugin's marker already there: it never dies), so outputs and
fingerprints must be equal. Ray is installed on Jazzy only (scripts/bootstrap.sh).
"""
import importlib.util
import ipaddress
import json
import os
import secrets
import shutil
import socket
import sys
import tempfile

import psutil
import pytest

from support.batch_runs import (
    CFG,
    PAIR_PARAMS,
    PARAMS,
    bag_messages,
    manifest,
    run_batch,
    write_params_file,
)
from support.da3_fixtures import tiny_state_dict, write_safetensors
from support.procs import ROOT
from support.rosutil import TEST_DIR
from tt_depth_ros.tools.bag import sample as sample_bag
from tt_depth_ros.tools.batch.ray_runner import RayOptions, actor_demand, parse_resource

GOOD = ('mcap_a', 'sql_b', 'mcap_c')
RAY_ENV = {'RAY_USAGE_STATS_ENABLED': '0', 'RAY_enable_metrics_collection': '0',
           'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN': secrets.token_hex(32),
           'PYTHONPATH': os.pathsep.join([str(TEST_DIR), str(ROOT)]),   # the plugin, on workers
           'OMP_WAIT_POLICY': 'PASSIVE'}
OBJECT_STORE_BYTES = 128 << 20   # bags never travel as objects; Ray's default is 30% of RAM


def _loopback_only() -> bool:
    return set(psutil.net_if_addrs()) <= {'lo'}


def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip.split('%')[0])
    return (getattr(addr, 'ipv4_mapped', None) or addr).is_loopback


@pytest.fixture(scope='module')
def cluster():
    """A 2-CPU Ray cluster of this process, loopback only; yields its GCS address."""
    if importlib.util.find_spec('ray') is None:   # Kilted's venv has none (and runs no test here)
        msg = 'ray is not installed: scripts/bootstrap.sh jazzy installs it'
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(msg)
        pytest.skip(msg)
    if not _loopback_only():
        msg = ('the Ray tests need a loopback-only network namespace (Ray binds the machine '
               "address otherwise): run them under `unshare -n` as scripts/run_tests.sh does")
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(msg)
        pytest.skip(msg)
    saved = {k: os.environ.get(k) for k in (*RAY_ENV, 'RAY_ADDRESS')}
    os.environ.update(RAY_ENV)   # the cluster's processes and the CLI's inherit them
    import ray  # after RAY_AUTH_*: Ray reads them once, at import

    temp = tempfile.mkdtemp(prefix='ttray-')   # short: Ray's socket paths live under it
    try:
        ray.init(address='local', num_cpus=2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=OBJECT_STORE_BYTES, _node_ip_address='127.0.0.1',
                 _temp_dir=temp)
        yield ray.get_runtime_context().gcs_address
    finally:
        if 'ray' in sys.modules:
            sys.modules['ray'].shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope='module')
def runs(cluster, tmp_path_factory):
    """Bags, parameters, the local reference run and the Ray run with one actor killed."""
    root = tmp_path_factory.mktemp('batch_ray')
    weights = write_safetensors(tiny_state_dict(), root / 'tiny.safetensors')
    marker = root / 'an-actor-died'
    plugin_args = {'weights_path': str(weights), 'marker': str(marker), 'after_frames': 3}
    params = dict(PARAMS, engine_plugin='support.fake_engines.dies_once:tiny_dies_once',
                  engine_plugin_args=json.dumps(plugin_args))
    write_params_file(root / 'depth.yaml', params)
    bags = root / 'bags'
    sample_bag.generate(bags / 'mcap_a', sample_bag.SampleBagConfig(**CFG))
    sample_bag.generate(bags / 'sql_b', sample_bag.SampleBagConfig(**CFG, storage='sqlite3'))
    sample_bag.generate(bags / 'mcap_c', sample_bag.SampleBagConfig(**CFG, step_m=0.2))
    shutil.copytree(bags / 'mcap_a', bags / 'truncated')
    data = bags / 'truncated' / 'mcap_a.mcap'
    data.write_bytes(data.read_bytes()[:data.stat().st_size * 6 // 10])
    common = ('--params', root / 'depth.yaml', '--torch-threads', '1')
    marker.touch()    # the local reference never dies
    local = run_batch(bags, '--out', root / 'local', *common)
    marker.unlink()
    on_ray = run_batch(bags, '--out', root / 'ray', '--ray', cluster, *common)
    return {'bags': bags, 'root': root, 'common': common, 'marker': marker, 'local': local,
            'ray': on_ray}


def test_ray_listens_on_loopback_only(cluster):
    ours = {p.pid for p in psutil.Process().children(recursive=True)} | {os.getpid()}
    listening = [c for c in psutil.net_connections('inet')
                 if c.status == psutil.CONN_LISTEN and c.pid in ours]
    assert listening, 'no Ray socket found: the check would pass vacuously'
    assert all(_is_loopback(c.laddr.ip) for c in listening), listening


def test_ray_outputs_equal_local_despite_a_killed_actor(runs):
    local, on_ray, root = runs['local'], runs['ray'], runs['root']
    log = on_ray.stdout + on_ray.stderr
    assert local.returncode == 1, local.stdout + local.stderr   # only `truncated` failed
    assert on_ray.returncode == 1, log
    assert runs['marker'].exists(), log    # an actor was killed (its own log line may come late)
    restarted = []
    for name in GOOD:
        m_local, m_ray = manifest(root / 'local', name), manifest(root / 'ray', name)
        assert m_ray['status'] == 'ok', m_ray
        assert m_ray['frames'] == m_local['frames'] == {'in': 6, 'out': 6, 'skipped': {}}
        assert m_ray['fingerprint'] == m_local['fingerprint']
        assert m_ray['output']['topics'] == m_local['output']['topics']
        assert m_ray['execution']['runner'] == 'ray' and m_local['execution']['runner'] == 'local'
        restarted += [name] if m_ray['execution']['after_actor_restart'] else []
        assert bag_messages(root / 'ray' / name) == bag_messages(root / 'local' / name), name
    assert len(restarted) == 1, restarted    # the killed attempt's bag, retried whole
    failed = manifest(root / 'ray', 'truncated')
    assert failed['status'] == 'failed' and 'corrupt or truncated' in failed['reason']
    assert not list((root / 'ray').glob('*.partial*'))    # the dead attempt's output is gone
    assert 'progress: 4/4 bags' in log


def test_ray_resume_skips_done_bags(runs, cluster):
    out = runs['root'] / 'ray'
    started = {n: manifest(out, n)['started'] for n in GOOD}
    again = run_batch(*(runs['bags'] / n for n in GOOD), '--out', out, '--ray', cluster,
                   *runs['common'])
    log = again.stdout + again.stderr
    assert again.returncode == 0, log
    table = {line.split()[0]: line.split()[1:] for line in again.stdout.splitlines()[2:5]}
    assert table == {n: ['skipped', '6/6', '0.0', 'up', 'to', 'date'] for n in GOOD}, log
    assert ': processing' not in log and 'engine' not in log, log   # no engine built
    assert {n: manifest(out, n)['started'] for n in GOOD} == started


def test_ray_gives_up_after_the_retries_and_leaves_no_partial_output(runs, cluster):
    """--ray-retries 0: the killed attempt's bag fails with a manifest, the other one completes."""
    out, root = runs['root'] / 'no_retry', runs['root']
    runs['marker'].unlink()   # arm the plugin again: the next process at 3 frames dies
    proc = run_batch(runs['bags'] / 'mcap_a', runs['bags'] / 'sql_b', '--out', out, '--ray',
                     cluster, '--ray-retries', '0', *runs['common'])
    log = proc.stdout + proc.stderr
    assert proc.returncode == 1 and runs['marker'].exists(), log
    status = {n: manifest(out, n)['status'] for n in ('mcap_a', 'sql_b')}
    assert sorted(status.values()) == ['failed', 'ok'], log
    dead, done = sorted(status, key=lambda n: status[n])   # 'failed' < 'ok'
    assert 'died on each of 1 attempt(s)' in manifest(out, dead)['reason']
    assert not (out / dead).exists() and not list(out.glob('*.partial*'))
    assert bag_messages(out / done) == bag_messages(root / 'local' / done)


def test_ray_address_without_a_head_is_a_usage_error(runs, tmp_path):
    with socket.socket() as s:   # a loopback port nobody listens on
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    proc = run_batch(runs['bags'] / 'mcap_a', '--out', tmp_path / 'o', '--ray',
                     f'127.0.0.1:{port}', *runs['common'], timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f'no Ray head answers at 127.0.0.1:{port}' in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_actor_demand_follows_the_backend_unless_told():
    """What one actor asks Ray for (no cluster needed)."""
    def demand(backend, threads=0, **options):
        return actor_demand(backend, threads, RayOptions('auto', **options))

    assert demand('torch-cpu') == {'CPU': 1.0, 'GPU': 0.0}
    assert demand('torch-cpu', 4) == {'CPU': 4.0, 'GPU': 0.0}
    assert demand('torch-cuda') == {'CPU': 1.0, 'GPU': 1.0}
    assert demand('ttnn') == {'CPU': 1.0, 'GPU': 0.0, 'tenstorrent': 1.0}
    assert demand('ttnn', resources={'p150': 2.0}) == {'CPU': 1.0, 'GPU': 0.0, 'p150': 2.0}
    assert demand('torch-cuda', num_gpus=0.5)['GPU'] == 0.5
    assert parse_resource('tenstorrent=1') == ('tenstorrent', 1.0)
    for bad in ('tenstorrent', 'tenstorrent=0', '=1', 'GPU=1', 'x=many'):
        with pytest.raises(ValueError, match='NAME=AMOUNT'):
            parse_resource(bad)


def test_pair_node_on_ray_equals_local(cluster, tmp_path):
    """The pair node's work (stereo, tiny DUSt3R) on a Ray actor: the local run's bag exactly."""
    sample_bag.generate(tmp_path / 'bags' / 'rig', sample_bag.SampleBagConfig(**CFG))
    common = ('--params', write_params_file(tmp_path / 'pair.yaml', PAIR_PARAMS),
              '--torch-threads', '1')
    local = run_batch(tmp_path / 'bags', '--out', tmp_path / 'local', *common)
    on_ray = run_batch(tmp_path / 'bags', '--out', tmp_path / 'ray', '--ray', cluster, *common)
    assert local.returncode == 0 and on_ray.returncode == 0, on_ray.stdout + on_ray.stderr
    m_local, m_ray = manifest(tmp_path / 'local', 'rig'), manifest(tmp_path / 'ray', 'rig')
    assert m_ray['node'] == 'pair' and m_ray['execution']['runner'] == 'ray'
    assert m_ray['frames'] == m_local['frames'] and m_ray['frames']['out'] == CFG['frames']
    assert m_ray['fingerprint'] == m_local['fingerprint']
    got = bag_messages(tmp_path / 'ray' / 'rig')
    assert '/camera/pose' in got and '/tf' in got
    assert got == bag_messages(tmp_path / 'local' / 'rig')
