"""The benchmark's trajectory pass: the pair node (temporal mode) per engine vs the bag's GT poses.

For each engine (e.g. DUSt3R and a DA3 any-view model; `model[@window_size][:pose_source]`, e.g.
`da3-small:pnp` for the ray-head pose), the real pair node runs in its own process in temporal
mode on the bag's camera; its `pose` outputs (the camera in the chain's odom-like frame) are
matched by header stamp to `/camera/pose_gt` (the optical frame in `odom`). Errors, as usual
for monocular VO whose scale and origin are unknown:
- ATE: RMSE of camera positions after a Sim(3) (Umeyama) alignment of the estimate to the ground
  truth, in ground-truth metres (and the fitted scale);
- RPE: per consecutive estimated pose pair, the rotation error and the translation-direction
  error of the relative motion (tools/eval/accuracy.pose_errors), both scale-free.
Fewer than 3 poses: no alignment (`ate_rmse_m` NaN, with the reason). Frames are published at a
fixed low rate (a frame without a pose publishes nothing, so output pacing would stall).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from tt_depth_ros.tools.bag.decode import decode_pose
from tt_depth_ros.tools.bag.io import header_stamp_ns, read_bag
from tt_depth_ros.tools.bag.sample import POSE_GT
from tt_depth_ros.tools.bench.node_process import require, start_node, stop_process

POSE_SOURCES = ('auto', 'camera_decoder', 'pnp')


def parse_engine(spec: str) -> tuple[str, int, str]:
    """'MODEL[@WINDOW][:POSE_SOURCE]' -> (model, window_size, pose_source).

    'dust3r-tiny' -> ('dust3r-tiny', 2, 'auto'); 'da3-anyview-tiny@3' -> (..., 3, 'auto');
    'da3-small:pnp' -> ('da3-small', 2, 'pnp') (the pair node's pose_source).
    """
    rest, _, pose_source = spec.partition(':')
    model, _, window = rest.partition('@')
    pose_source = pose_source or 'auto'
    if not model:
        raise ValueError(f'trajectory engine {spec!r}: expected MODEL[@WINDOW][:POSE_SOURCE]')
    if pose_source not in POSE_SOURCES:
        raise ValueError(f'trajectory engine {spec!r}: pose source {pose_source!r} is not one '
                         f'of {POSE_SOURCES}')
    try:
        n = int(window) if window else 2
    except ValueError:
        raise ValueError(f'trajectory engine {spec!r}: window size {window!r} is not an '
                         'integer') from None
    if n < 2:
        raise ValueError(f'trajectory engine {spec!r}: window size must be >= 2')
    return model, n, pose_source


def umeyama_sim3(src: np.ndarray, dst: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """s, R, t minimising sum |dst - (s R src + t)|^2 (Umeyama 1991); src, dst: (N, 3), N >= 3."""
    src, dst = np.asarray(src, np.float64), np.asarray(dst, np.float64)
    mu_s, mu_d = src.mean(0), dst.mean(0)
    xs, xd = src - mu_s, dst - mu_d
    cov = xd.T @ xs / len(src)
    U, D, Vt = np.linalg.svd(cov)
    S = np.eye(3)
    if np.linalg.det(U) * np.linalg.det(Vt) < 0:
        S[2, 2] = -1.0
    R = U @ S @ Vt
    var_s = float((xs ** 2).sum() / len(src))
    s = float(np.trace(np.diag(D) @ S) / var_s) if var_s > 0 else math.nan
    return s, R, mu_d - s * R @ mu_s


def trajectory_errors(est: list[np.ndarray], gt: list[np.ndarray]) -> dict:
    """ATE (Sim(3)-aligned) and RPE of camera-to-world poses matched by index (module doc)."""
    from tt_depth_ros.tools.eval import accuracy as acc

    out: dict = {'poses': len(est)}
    rpe = [acc.pose_errors(acc.relative_pose(est[i], est[i + 1]),
                           acc.relative_pose(gt[i], gt[i + 1])) for i in range(len(est) - 1)]
    rpe_mean = acc.mean_metrics(rpe)
    out['rpe_rot_deg'] = rpe_mean.get('rot_err_deg', math.nan)
    out['rpe_trans_dir_deg'] = rpe_mean.get('trans_dir_err_deg', math.nan)
    if len(est) < 3:
        out.update(ate_rmse_m=math.nan, sim3_scale=math.nan,
                   ate_note=f'{len(est)} poses: at least 3 are needed for a Sim(3) alignment')
        return out
    p_est = np.array([T[:3, 3] for T in est])
    p_gt = np.array([T[:3, 3] for T in gt])
    s, R, t = umeyama_sim3(p_est, p_gt)
    resid = p_gt - (s * (R @ p_est.T).T + t)
    path = float(np.sum(np.linalg.norm(np.diff(p_gt, axis=0), axis=1)))
    out.update(ate_rmse_m=float(np.sqrt(np.mean(np.sum(resid ** 2, axis=1)))), sim3_scale=s,
               gt_path_length_m=path)
    return out


def _node_cmd(model: str, window: int, weights: str, backend: str, network_size: int,
              image: str, info: str, ns: str, pose_source: str = 'auto') -> list[str]:
    cmd = [sys.executable, '-m', 'tt_depth_ros.ros.pair', '--ros-args',
           '-r', f'__ns:={ns}', '-p', f'model:={model}', '-p', f'backend:={backend}',
           '-p', 'mode:=temporal', '-p', f'network_size:={network_size}',
           '-p', 'scale_source:=none', '-p', 'publish_tf:=never', '-p', 'conf_threshold:=1.0',
           '-r', f'image:={image}', '-r', f'camera_info:={info}']
    if window > 2:
        cmd += ['-p', f'window_size:={window}']
    if pose_source != 'auto':
        cmd += ['-p', f'pose_source:={pose_source}']
    if weights:
        cmd += ['-p', f'weights_path:={weights}']
    return cmd


def trajectory_pass(node, cfg, spec: str, weights: str, out_dir: Path, log) -> dict:
    """One engine: pair node (temporal) on the bag, poses vs ground truth (module doc).

    Args:
        node: the benchmark's rclpy node (spun by the caller).
        cfg: BenchConfig (bag, topics, backend, trajectory_rate_hz, startup_timeout_s).
        spec: 'MODEL[@WINDOW_SIZE][:POSE_SOURCE]' (parse_engine).
        weights: weights file for the model ('' = the node resolves them).
        out_dir: where the node log goes.
        log: callable(str) for progress.
    """
    from tt_depth_ros.tools.bag.replay import Player
    from tt_depth_ros.tools.bench.probe import OutputMonitor

    model, window, pose_source = parse_engine(spec)
    label = spec.replace('@', '_w').replace(':', '_')
    ns = '/traj_' + label.replace('-', '_').replace('.', '_')
    msgs, types = read_bag(cfg.bag, [cfg.info_topic, cfg.image_topic])
    gt_by_stamp = {header_stamp_ns(m.raw): decode_pose(m.raw).T
                   for m in read_bag(cfg.bag, [POSE_GT])[0]}
    if not gt_by_stamp:
        return {'skipped': f'no {POSE_GT} in the bag'}
    player = Player(node, msgs, types, frame_topic=cfg.image_topic)
    pose_mon = OutputMonitor(node, f'{ns}/pose', 'geometry_msgs/msg/PoseStamped',
                             keep_payloads=True)
    cmd = _node_cmd(model, window, weights, cfg.backend, cfg.trajectory_network_size,
                    cfg.image_topic, cfg.info_topic, ns, pose_source)
    log_path = out_dir / f'{cfg.name}{cfg.tag}_trajectory_{label}_node.log'
    log(f'trajectory {spec}: pair node (temporal, window {window}) on {len(player.frames)} '
        f'frames at {cfg.trajectory_rate_hz:g} Hz; log {log_path}')
    proc = start_node(cmd, log_path)
    index: dict[int, int] = {}
    t0 = time.monotonic()
    try:
        require(player.wait_for_subscribers(1, cfg.startup_timeout_s, all_topics=True)
                and proc.poll() is None, f'pair node ({spec}) did not come up', log_path)
        _, offset = player.prime(pose_mon, 1, total_timeout_s=cfg.startup_timeout_s)
        pose_mon.take()
        pose_mon.payloads.clear()
        player.play('rate', rate_hz=cfg.trajectory_rate_hz, stamp_offset_ns=offset,
                    on_frame=lambda s, t, i: index.update({s: i}))
        pose_mon.wait_for(set(index), 20.0, 5.0)
    finally:
        stop_process(proc)
    est, gt, frames = [], [], []
    for stamp, i in sorted(index.items()):
        raw = pose_mon.payloads.get(stamp)
        bag_stamp = header_stamp_ns(player.frames[i][-1].raw)
        if raw is None or bag_stamp not in gt_by_stamp:
            continue
        est.append(decode_pose(raw).T)
        gt.append(gt_by_stamp[bag_stamp])
        frames.append(i)
    out = {'model': model, 'window_size': window, 'pose_source': pose_source, 'weights': weights,
           'frames_sent': len(index), 'frame_indices': frames,
           'poses_est': [T.tolist() for T in est], 'poses_gt': [T.tolist() for T in gt],
           **trajectory_errors(est, gt), 'node_command': cmd, 'node_log': str(log_path),
           'wall_s': time.monotonic() - t0}
    log(f'trajectory {spec}: {len(est)}/{len(index)} poses; ATE '
        f'{out["ate_rmse_m"]:.4f} m (Sim(3)), RPE rotation {out["rpe_rot_deg"]:.2f} deg, '
        f'translation direction {out["rpe_trans_dir_deg"]:.2f} deg')
    return out
