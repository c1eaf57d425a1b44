"""`tt-depth predict dust3r IMG1 IMG2`: pointmaps, fused cloud and pose of an image pair.

Writes <out>/<name>.npz (all maps, intrinsics, pose, scale), <name>.ply (fused coloured cloud in
camera 1's frame) and <name>.json (summary: pose, inliers, scale source, timings).
"""
from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from tt_depth_ros.engines import registry
from tt_depth_ros.tools.cli.engine_args import add_engine_arguments

MODELS = registry.names(family='dust3r')


def _parse_intrinsics(text: str):
    import numpy as np

    try:
        fx, fy, cx, cy = (float(v) for v in text.split(','))
    except ValueError as e:
        raise ValueError(f'--intrinsics {text!r}: expected fx,fy,cx,cy (pixels)') from e
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `predict dust3r` options to `parser`."""
    parser.add_argument('image1', help='view 1 (the reference camera)')
    parser.add_argument('image2', help='view 2')
    add_engine_arguments(parser, MODELS, 'dust3r-vitl-512-dpt',
                         dtype_help='precision preset (default auto, as the nodes; heads '
                         'stay float32)')
    cam = parser.add_argument_group('intrinsics (pixels of the given images); without K2 the '
                                    'focal is estimated from the pointmap')
    cam.add_argument('--intrinsics', metavar='FX,FY,CX,CY', help='both images (one camera)')
    cam.add_argument('--intrinsics2', metavar='FX,FY,CX,CY', help='image 2, if another camera')
    cam.add_argument('--camera-info', metavar='YAML', help='CameraInfo YAML for both images')
    cam.add_argument('--camera-info2', metavar='YAML', help='CameraInfo YAML for image 2')
    parser.add_argument('--mode', default='crop', choices=('crop', 'pad'),
                        help="crop = upstream preprocessing; pad = letterbox to a square")
    parser.add_argument('--pose', action='store_true',
                        help='estimate camera 2 in camera 1 by PnP-RANSAC')
    sc = parser.add_mutually_exclusive_group()
    sc.add_argument('--baseline', type=float, metavar='M',
                    help='known camera distance in metres: scale = M / |t| (implies --pose)')
    sc.add_argument('--scale', type=float, help='known factor from DUSt3R units to metres')
    parser.add_argument('--conf-threshold', type=float, default=3.0,
                        help='PnP mask and cloud threshold (conf > T; upstream 3)')
    parser.add_argument('--percentile', type=float,
                        help='cloud: keep the top (100 - P) %% per view instead of a threshold')
    parser.add_argument('--out', default='tt_depth_out', help='output directory')
    parser.add_argument('--name', help='output file stem (default: <img1>_<img2>)')


def _K(args, which: int, rgb):
    from tt_depth_ros.api.io import read_camera_info_yaml

    text = args.intrinsics2 if which == 2 and args.intrinsics2 else args.intrinsics
    yaml_path = args.camera_info2 if which == 2 and args.camera_info2 else args.camera_info
    if text and yaml_path:
        raise ValueError('give --intrinsics or --camera-info for an image, not both')
    if text:
        return _parse_intrinsics(text)
    if yaml_path:
        return read_camera_info_yaml(yaml_path, rgb.shape[1], rgb.shape[0])
    return None


def run(args: argparse.Namespace) -> int:
    """Reconstruct the pair; write .npz, .ply and .json; return an exit code."""
    if args.offline:
        os.environ['HF_HUB_OFFLINE'] = '1'
    from tt_depth_ros.api.pair import Dust3rPredictor, load_image

    log = logging.getLogger('tt-depth')
    rgb1, rgb2 = load_image(args.image1), load_image(args.image2)
    K1, K2 = _K(args, 1, rgb1), _K(args, 2, rgb2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / (args.name or f'{Path(args.image1).stem}_{Path(args.image2).stem}')
    with Dust3rPredictor.from_pretrained(
            args.model, weights=args.weights, revision=args.revision, backend=args.backend,
            device_id=args.device_id, dtype=args.dtype, logger=log, mode=args.mode,
            conf_threshold=args.conf_threshold) as predictor:
        r = predictor(rgb1, rgb2, K1, K2, scale=args.scale,
                      scale_source='user' if args.scale is not None else None,
                      baseline_m=args.baseline, pose=args.pose or args.baseline is not None)
    r.save_npz(f'{stem}.npz')
    threshold = None if args.percentile is not None else args.conf_threshold
    n = r.save_ply(f'{stem}.ply', threshold=threshold, percentile=args.percentile)
    r.save_json(f'{stem}.json')
    h, w = r.conf_1.shape
    msg = (f'{args.image1} + {args.image2}: network {w}x{h}, {n} cloud points, '
           f'engine {r.timings["engine"] * 1000:.0f} ms on {r.backend}, '
           f'units: {r.summary()["units"]}')
    if r.pose is not None:
        if r.pose.success:
            msg += (f'; pose: {r.pose.to_dict()["rotation_deg"]:.2f} deg, t={r.pose.t.round(4)}'
                    f', {r.pose.inliers} inliers ({100 * r.pose.inlier_ratio:.0f} %), focal '
                    f'from {r.pose.focal_source}')
        else:
            msg += f'; pose FAILED: {r.pose.reason}'
    print(f'{msg} -> {stem}.{{npz,ply,json}}')
    return 0 if r.pose is None or r.pose.success else 3
