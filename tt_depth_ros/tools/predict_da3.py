"""`tt-depth predict da3 IMG...`: metric depth files for image files (DepthPredictor)."""
from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

import numpy as np

from tt_depth_ros.tools.engine_args import add_engine_arguments

FORMATS = ('png16', 'npz', 'npy', 'color', 'ply')
MODELS = ('da3metric-large', 'da3mono-large', 'da3metric-tiny')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `predict da3` options to `parser`."""
    parser.add_argument('images', nargs='+', help='image files (any format Pillow reads)')
    add_engine_arguments(parser, MODELS, 'da3metric-large',
                         model_help='da3metric-large = metres; da3mono-large = relative depth',
                         dtype_help='activation dtype (default float32)')
    cam = parser.add_argument_group('intrinsics of the images (pixels); without them the scale '
                                    'is a guess')
    cam.add_argument('--fx', type=float)
    cam.add_argument('--fy', type=float)
    cam.add_argument('--cx', type=float, help='default: image centre')
    cam.add_argument('--cy', type=float, help='default: image centre')
    cam.add_argument('--camera-info', metavar='YAML',
                     help='CameraInfo YAML (camera_calibration format or `ros2 topic echo` dump); '
                          'P/K, binning, ROI and size scaling applied')
    parser.add_argument('--process-res', type=int, default=504,
                        help='long side of the network input (upstream default 504)')
    parser.add_argument('--fixed-size', type=int, nargs=2, metavar=('H', 'W'),
                        help='force the network size (multiples of 14; may change the aspect)')
    parser.add_argument('--sky-mode', default='inf', choices=('inf', 'nan', 'keep'))
    parser.add_argument('--sky-threshold', type=float, default=0.3)
    parser.add_argument('--max-depth', type=float, help='metres; farther becomes +Inf')
    parser.add_argument('--output-res', default='camera', choices=('camera', 'network'))
    parser.add_argument('--out', default='tt_depth_out', help='output directory')
    parser.add_argument('--formats', default='png16,color',
                        help=f'comma list of {",".join(FORMATS)}')
    parser.add_argument('--ply-decimation', type=int, default=1)


def run(args: argparse.Namespace) -> int:
    """Predict every image; write the requested files; return an exit code."""
    formats = [f for f in args.formats.split(',') if f]
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ValueError(f'--formats: unknown {bad}; allowed: {FORMATS}')
    if args.model == 'da3mono-large' and {'png16', 'ply'} & set(formats):
        raise ValueError('da3mono-large gives relative depth: png16 (millimetres) and ply are '
                         'metric formats; use npz, npy or color')
    if (args.fx is None) != (args.fy is None):
        raise ValueError('--fx and --fy go together')
    if args.camera_info and args.fx is not None:
        raise ValueError('give --fx/--fy/--cx/--cy or --camera-info, not both')
    if args.offline:
        os.environ['HF_HUB_OFFLINE'] = '1'
    from tt_depth_ros.api.depth import DepthPredictor
    from tt_depth_ros.api.io import load_rgb, read_camera_info_yaml

    log = logging.getLogger('tt-depth')
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with DepthPredictor.from_pretrained(
            args.model, weights=args.weights, revision=args.revision, backend=args.backend,
            device_id=args.device_id, dtype=args.dtype, logger=log,
            process_res=args.process_res,
            fixed_size=tuple(args.fixed_size) if args.fixed_size else None,
            sky_mode=args.sky_mode, sky_threshold=args.sky_threshold,
            max_depth_m=args.max_depth, output=args.output_res) as predictor:
        for path in args.images:
            rgb = load_rgb(path)
            K = None
            if args.camera_info:
                K = read_camera_info_yaml(args.camera_info, rgb.shape[1], rgb.shape[0])
            r = predictor(rgb, K, fx=args.fx, fy=args.fy, cx=args.cx, cy=args.cy)
            stem = out / Path(path).stem
            savers = {'png16': (r.save_png16_mm, '_depth_mm.png'),
                      'npz': (r.save_npz, '_depth.npz'), 'npy': (r.save_npy, '_depth.npy'),
                      'color': (r.save_colorized, '_depth_color.png'),
                      'ply': (lambda p, r=r: r.save_ply(p, args.ply_decimation), '.ply')}
            written = []
            for f in formats:
                fn, suffix = savers[f]
                fn(str(stem) + suffix)
                written.append(Path(str(stem) + suffix).name)
            finite = r.depth[np.isfinite(r.depth)]
            unit = 'm' if r.is_metric else '(relative)'
            med = f'{np.median(finite):.3f} {unit}' if finite.size else 'n/a'
            note = '  [intrinsics assumed: scale unreliable]' if r.intrinsics_assumed else ''
            print(f'{path}: {r.depth.shape[1]}x{r.depth.shape[0]}, median depth {med}, '
                  f'sky {100 * r.sky.mean():.1f} %, engine {r.timings["engine"] * 1000:.0f} ms '
                  f'on {r.backend} -> {out}/{{{",".join(written)}}}{note}')
    return 0
