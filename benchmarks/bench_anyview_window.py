#!/usr/bin/env python3
"""Temporal trajectory accuracy of the pair node's any-view path: window_size 2 vs N.

Not a test: it prints figures. The synthetic sequence is the ray-cast corridor walk of
tools/eval/scene_render.py (the one the pair-node tests use); frames go through the pair node's
own pipeline (pipelines/pair_anyview.AnyviewPairPipeline) and keyframe chain
(geometry/pose/keyframes.py) with the same per-frame steps as `PairNode._process_temporal`, once per
window size, and the resulting trajectory is compared with the ground truth: ATE RMSE after the
best single scale (the any-view models are relative), mean rotation error and mean
translation-direction error of the per-frame poses in the first camera, seconds per frame.

Weights: `--weights FILE` or the Hugging Face cache for `--model` (da3-small by default; the
CC-BY-NC models need TT_DEPTH_ACCEPT_NC_LICENSE=1). Without them (offline) it runs the tiny
any-view config with rule-v1 synthetic weights and says so: those figures only exercise the path
(a random network has no idea of geometry), they are not an accuracy result.

    .venv/bin/python -m benchmarks.bench_anyview_window [--model da3-small] [--weights FILE]
        [--windows 2,4] [--frames 12] [--size 224x168] [--keyframe-every 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from tt_depth_ros.geometry.pose.keyframes import KeyframeChain, KeyframePolicy
from tt_depth_ros.pipelines.pair_anyview import AnyviewPairPipeline
from tt_depth_ros.pipelines.pair_dust3r import PairSettings
from tt_depth_ros.tools.eval.accuracy import (
    rotation_error_deg,
    translation_direction_error_deg,
)
from tt_depth_ros.tools.eval.scene_render import (
    default_scene,
    default_trajectory,
    intrinsics,
    render,
)


def build(model: str, weights: str | None, views: int):
    """(engine, label): the named model, else the tiny rule-v1 stand-in (labelled)."""
    from tt_depth_ros.engines.factory import build_engine
    from tt_depth_ros.engines.weights import WeightsUnavailableError

    try:
        return build_engine(model, weights=weights, backend='auto', num_views=views), model
    except WeightsUnavailableError as exc:
        print(f'# {model}: no weights ({str(exc).splitlines()[0]}); using the tiny any-view '
              'config with rule-v1 weights - figures exercise the path only')
    from devtools.checkpoints import key_shapes
    from devtools.rule_weights import rule_v1_state_dict

    sd = rule_v1_state_dict(key_shapes('da3-anyview-tiny'), x1=True)
    eng = build_engine('da3-anyview-tiny', state_dict=sd, backend='auto', num_views=views)
    return eng, 'da3-anyview-tiny (rule-v1 stand-in, NOT an accuracy result)'


def run_sequence(pipe, frames, K, keyframe_every: int, window: int):
    """Poses of every frame in the first camera (None where the chain had to skip)."""
    chain = KeyframeChain(KeyframePolicy(keyframe_every, 0.0, 0.0))
    past: list = []
    poses, seconds = [], []
    for i, rgb in enumerate(frames):
        if chain.keyframe is None:
            chain.start(rgb, i)
            poses.append(np.eye(4))
            continue
        t0 = time.perf_counter()
        kf_rgb = chain.keyframe.data
        r = pipe.run(kf_rgb, rgb, K, K, tuple(reversed(past[-(window - 2):])) if window > 2
                     else ())
        seconds.append(time.perf_counter() - t0)
        scale = pipe.chain_scale(chain.pair_scale(r.pts1[..., 2], r.mask1))
        if not (r.pose.success and scale.ok):
            poses.append(None)
            continue
        step = chain.track(r.T_units, scale, rgb, i,
                           frame_depth=np.nan_to_num(r.depth2(1.0), nan=0.0), frame_mask=r.mask2)
        if step.promoted:
            past.append(kf_rgb)
        poses.append(step.T_odom_frame)
    return poses, seconds


def errors(poses, gt):
    """ATE RMSE (best scale), mean rotation / translation-direction errors, frames solved."""
    ok = [i for i in range(1, len(gt)) if poses[i] is not None]
    if not ok:
        return {'solved': 0}
    te = np.array([poses[i][:3, 3] for i in ok])
    tg = np.array([gt[i][:3, 3] for i in ok])
    s = float((te * tg).sum() / max((te * te).sum(), 1e-12))
    ate = float(np.sqrt(((s * te - tg) ** 2).sum(axis=1).mean()))
    rot = np.mean([rotation_error_deg(poses[i][:3, :3], gt[i][:3, :3]) for i in ok])
    dirs = [translation_direction_error_deg(poses[i][:3, 3], gt[i][:3, 3]) for i in ok
            if np.linalg.norm(poses[i][:3, 3]) > 1e-12]
    return {'solved': len(ok), 'ate_m': ate, 'rot_deg': float(rot),
            'dir_deg': float(np.mean(dirs)) if dirs else float('nan')}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default='da3-small')
    ap.add_argument('--weights', default=None)
    ap.add_argument('--windows', default='2,4')
    ap.add_argument('--frames', type=int, default=12)
    ap.add_argument('--size', default='224x168')
    ap.add_argument('--keyframe-every', type=int, default=3)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split('x'))
    K = intrinsics(w, h, 70.0)
    traj = default_trajectory(a.frames, step_m=0.1)
    frames = [render(default_scene(), K, w, h, T)[0] for T in traj]
    gt = [np.linalg.inv(traj[0]) @ T for T in traj]
    print(f'# synthetic corridor, {a.frames} frames {w}x{h}, keyframe every {a.keyframe_every}')
    print('| window | model | solved | ATE (best scale) m | rot err deg | dir err deg | s/frame |')
    print('|---|---|---|---|---|---|---|')
    for window in (int(v) for v in a.windows.split(',')):
        engine, label = build(a.model, a.weights, window)
        pipe = AnyviewPairPipeline(engine, PairSettings(network_size=max(w, h),
                                                        conf_threshold=1.0))
        poses, secs = run_sequence(pipe, frames, K, a.keyframe_every, window)
        e = errors(poses, gt)
        engine.close()
        if not e['solved']:
            print(f'| {window} | {label} | 0 | - | - | - | - |')
            continue
        print(f"| {window} | {label} | {e['solved']}/{a.frames - 1} | {e['ate_m']:.4f} | "
              f"{e['rot_deg']:.3f} | {e['dir_deg']:.2f} | {np.median(secs):.3f} |")
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
