"""The demo's weights: real ones when they can be had, else a labelled rule-v1 stand-in.

Real weights come only from `engines.weights.resolve_weights` (explicit path, HF cache, pinned
download). When none can be had (an offline machine), the pipeline still runs end to end with a
rule-v1 checkpoint (tools/bench/rule_v1_checkpoint.py) of the *tiny* config: the full-size
network with random weights would take seconds per frame on a CPU and show nothing more. Such
runs are labelled RANDOM-WEIGHTS everywhere (logs, file names, reports) — their depth is noise.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tt_depth_ros.tools.bench.rule_v1_checkpoint import write_rule_v1_checkpoint

RANDOM_TAG = 'RANDOM-WEIGHTS'


@dataclass(frozen=True)
class WeightsChoice:
    """What the node will load: model name, weights file, and whether they are real."""

    model: str
    path: Path
    real: bool
    source: str        # 'explicit' | 'hub' | 'rule-v1'
    note: str = ''
    stand_in_for: str = ''   # rule-v1 runs: the full-size model this tiny network stands in for


def choose_weights(explicit: str | None, cache_dir: str | Path, *,
                   full_model: str = 'da3metric-large', tiny_model: str = 'da3metric-tiny',
                   offline: bool | None = None, log=print,
                   env_name: str = 'WEIGHTS') -> WeightsChoice:
    """Real full-size weights if they resolve, else a rule-v1 tiny checkpoint in `cache_dir`.

    Args:
        explicit: a weights file chosen by the user (WEIGHTS=...): used as is, must exist.
        cache_dir: where to write the rule-v1 checkpoint.
        full_model: model the real weights are for.
        tiny_model: model used with random weights.
        offline: passed to resolve_weights (None: honour HF_HUB_OFFLINE).
        log: callable(str) for what was chosen and why.
        env_name: the variable users set to choose a file (named in the message).
    """
    from tt_depth_ros.engines.weights import WeightsUnavailableError, resolve_weights

    if full_model.startswith('dust3r'):
        import tt_depth_ros.engines.torch.dust3r  # noqa: F401  (registers the DUSt3R weights pin)
    else:
        import tt_depth_ros.engines.torch.da3  # noqa: F401  (registers the DA3 family weights)
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise FileNotFoundError(f'WEIGHTS={explicit} is not a file; point it at the '
                                    f'{full_model} safetensors checkpoint or unset it')
        return WeightsChoice(full_model, p, True, 'explicit')
    try:
        log(f'looking for {full_model} weights (HF cache, then download; HF_HUB_OFFLINE=1 skips '
            'the download attempt) ...')
        p = resolve_weights(full_model, None, None, offline)
        return WeightsChoice(full_model, Path(p), True, 'hub')
    except (WeightsUnavailableError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    path = Path(cache_dir) / f'{tiny_model}_rule-v1.safetensors'
    if not path.is_file():
        write_rule_v1_checkpoint(tiny_model, path)
    log(f'*** {RANDOM_TAG}: real {full_model} weights unavailable ({reason}). Running the '
        f'{tiny_model} network (a tiny-config STAND-IN for {full_model}) with rule-v1 RANDOM '
        'weights: the pipeline runs end to end, the depth values are meaningless. Set '
        f'{env_name}=/path/to/model.safetensors for real output.')
    return WeightsChoice(tiny_model, path, False, 'rule-v1', note=reason, stand_in_for=full_model)
