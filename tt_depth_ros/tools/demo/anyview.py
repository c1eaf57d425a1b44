"""The demo's any-view pass: DA3-SMALL (a relative model) through the real depth node.

DA3-SMALL never publishes `depth` (metres) without a scale source: it publishes `depth_relative`
(its own unit), `confidence` and `camera_info_estimated` (its own intrinsics estimate). The demo
records those, and for a look at the depth shape it aligns each relative frame to the ground
truth with one median ratio (geometry/pointmap/scale.median_ratio_scale) — said in the report
(`scale_alignment`), since a robot would need a real scale source (README "Models and licences").
Offline, the network is the tiny any-view config with rule-v1 (+ X1) weights, a labelled
stand-in: every file name and the report carry its tag.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tt_depth_ros.tools.bag.decode import decode_depth, decode_rgb
from tt_depth_ros.tools.bag.io import header_stamp_ns, read_bag
from tt_depth_ros.tools.bag.sample import CAMERA_INFO, DEPTH_GT, IMAGE
from tt_depth_ros.tools.bench.node_process import bring_up, require, start_node, stop_process
from tt_depth_ros.tools.demo.outputs import depth_panel
from tt_depth_ros.tools.demo.weights import RANDOM_TAG

FULL_MODEL = 'da3-small'
TINY_MODEL = 'da3-anyview-tiny'
ALIGNMENT = 'per-frame median ratio to the ground truth (relative model; demo only)'


def anyview_tag(w) -> str:
    """File-name tag: the model, and for a rule-v1 stand-in what it stands in for + RANDOM tag."""
    if w.real:
        return f'_{w.model}'
    return f'_{w.model}-standin-for-{w.stand_in_for or FULL_MODEL}_{RANDOM_TAG}'


def _decode_K(raw: bytes) -> list[list[float]]:
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import CameraInfo
    return np.reshape(deserialize_message(raw, CameraInfo).k, (3, 3)).tolist()


def anyview_pass(ros, bag: Path, out: Path, w, backend: str, process_res: int, max_frames: int,
                 log) -> dict:
    """Depth node with a relative any-view model on the bag's first frames (consumer-paced).

    Returns the report section: outputs, aligned accuracy, estimated K, panels, node log.
    """
    from tt_depth_ros.api.io import write_png
    from tt_depth_ros.geometry.pointmap.scale import median_ratio_scale
    from tt_depth_ros.tools.bag.replay import Player
    from tt_depth_ros.tools.bench.probe import OutputMonitor
    from tt_depth_ros.tools.eval import accuracy as acc

    tag = anyview_tag(w)
    msgs, types = read_bag(bag, [CAMERA_INFO, IMAGE])
    player = Player(ros.node, msgs, types, frame_topic=IMAGE)
    rel_mon = OutputMonitor(ros.node, '/anyview/depth_relative', 'sensor_msgs/msg/Image',
                            keep_payloads=True)
    conf_mon = OutputMonitor(ros.node, '/anyview/confidence', 'sensor_msgs/msg/Image',
                             keep_payloads=True)
    k_mon = OutputMonitor(ros.node, '/anyview/camera_info_estimated',
                          'sensor_msgs/msg/CameraInfo', keep_payloads=True)
    metric_mon = OutputMonitor(ros.node, '/anyview/depth', 'sensor_msgs/msg/Image')
    cmd = [sys.executable, '-m', 'tt_depth_ros.ros.depth', '--ros-args',
           '-r', '__ns:=/anyview', '-p', f'model:={w.model}', '-p', f'weights_path:={w.path}',
           '-p', f'backend:={backend}', '-p', f'process_res:={process_res}',
           '-r', f'image:={IMAGE}', '-r', f'camera_info:={CAMERA_INFO}']
    log_path = out / f'depth_node{tag}.log'
    what = f'{w.model}' + ('' if w.real else f' (tiny STAND-IN for {w.stand_in_for}, rule-v1)')
    log(f'[anyview] starting depth node ({what}, backend {backend}); log: {log_path}')
    proc = start_node(cmd, log_path)
    index = {}
    try:
        _, offset = bring_up(player, proc, rel_mon, 'any-view depth', log_path)
        conf_mon.payloads.clear()
        k_mon.payloads.clear()
        player.play('consumer', consumer=rel_mon, consumer_timeout_s=300.0,
                    max_frames=max_frames, on_frame=lambda s, t, i: index.update({s: i}),
                    stamp_offset_ns=offset)
        conf_mon.wait_for(set(index), 5.0, 2.0)
    finally:
        stop_process(proc)
    require(bool(rel_mon.payloads), 'the any-view depth node produced no depth_relative', log_path)
    gt = {header_stamp_ns(m.raw): m.raw for m in read_bag(bag, [DEPTH_GT])[0]}
    per_frame, files, scales = [], [], []
    for stamp, i in index.items():
        raw = rel_mon.payloads.get(stamp)
        if raw is None:
            continue
        frame = player.frames[i][-1].raw
        truth = decode_depth(gt[header_stamp_ns(frame)])
        rel = decode_depth(raw)
        rel = acc.resize_nearest(rel, truth.shape) if rel.shape != truth.shape else rel
        s = median_ratio_scale(truth, rel)
        if s.value is None:
            continue
        scales.append(s.value)
        per_frame.append(acc.depth_metrics(rel * s.value, truth))
        path = out / f'anyview_depth_{i:03d}{tag}.png'
        write_png(path, depth_panel(decode_rgb(frame), rel * s.value, truth, unit='relative'))
        files.append(str(path))
    conf = [float(np.nanmean(decode_depth(c))) for c in conf_mon.payloads.values()]
    first_k = next((k_mon.payloads[s] for s in index if s in k_mon.payloads), None)
    summary = acc.mean_metrics(per_frame)
    log(f'[anyview] {len(rel_mon.payloads)} depth_relative, {len(conf)} confidence, '
        f'{len(k_mon.payloads)} camera_info_estimated for {len(index)} frames; nothing on '
        f'depth ({metric_mon.count} messages: a relative model has no metres); median-aligned '
        f'AbsRel {summary.get("abs_rel", float("nan")):.3f}'
        + ('' if w.real else f'  ({tag[1:]}: expected to be poor)'))
    return {'model': w.model, 'stand_in_for': w.stand_in_for, 'real_weights': w.real,
            'tag': tag, 'frames_sent': len(index), 'depth_relative': len(rel_mon.payloads),
            'confidence': len(conf), 'confidence_mean': conf,
            'camera_info_estimated': len(k_mon.payloads),
            'K_estimated_first': _decode_K(first_k) if first_k else None,
            'metric_depth_messages': metric_mon.count, 'scale_alignment': ALIGNMENT,
            'alignment_scales': scales, 'accuracy': summary, 'panels': files,
            'node_log': str(log_path)}
