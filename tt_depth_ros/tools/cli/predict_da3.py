"""`tt-depth predict da3 IMG...`: depth files for image files, any DA3 model.

Per image (DepthPredictor): metric models write metres; relative models (da3mono-large and the
any-view models) only the unit-free formats (npz, npy, color) - relative depth is never written
as millimetres or a metric cloud.

`--multi-view` (any-view / NESTED models, MultiViewPredictor): all images are one scene; writes
`poses.json` (per view `T_world_camera` 4x4 camera-to-world, row-major, OpenCV camera axes
x right / y down / z forward, K at the original image size, units 'm' or 'relative'),
`cloud.ply` (fused coloured points in the world frame) and `views.npz` (per-view depth_i, conf_i,
K, poses_c2w).
"""
from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

import numpy as np

from tt_depth_ros.engines import registry
from tt_depth_ros.tools.cli.engine_args import add_engine_arguments

FORMATS = ('png16', 'npz', 'npy', 'color', 'ply')
MULTI_FORMATS = ('json', 'ply', 'npz')
MODELS = registry.names(family='da3')
METRIC_FORMATS = {'png16', 'ply'}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `predict da3` options to `parser`."""
    parser.add_argument('images', nargs='+', help='image files (any format Pillow reads)')
    published = [registry.model(m) for m in registry.names(family='da3', published=True)]
    metres = ', '.join(m.name for m in published if m.kind.is_metric)
    relative = ', '.join(m.name for m in published if not m.kind.is_metric)
    add_engine_arguments(parser, MODELS, 'da3metric-large',
                         model_help=f'metres: {metres}; relative: {relative} (the any-view ones '
                                    'also estimate the camera)',
                         dtype_help='precision preset (default auto, as the nodes)')
    parser.add_argument('--onnx-provider', default=None,
                        help='--backend onnxruntime (--weights: a file from `tt-depth export`): '
                             'the execution provider (default CPUExecutionProvider)')
    opt_in = [m.name for m in published if m.needs_licence_opt_in]
    parser.add_argument('--accept-nc-license', action='store_true',
                        help='accept the CC-BY-NC-4.0 (non-commercial) licence of '
                             f"{', '.join(opt_in[:-1])} and {opt_in[-1]}")
    parser.add_argument('--multi-view', action='store_true',
                        help='all images are views of one scene (any-view / NESTED models): '
                             'poses.json, cloud.ply, views.npz')
    parser.add_argument('--conf-min', type=float,
                        help='--multi-view cloud: keep pixels with confidence >= this')
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
    parser.add_argument('--formats',
                        help=f'comma list of {",".join(FORMATS)} (default png16,color for metric '
                             'models, npz,color for relative ones); --multi-view: '
                             f'{",".join(MULTI_FORMATS)} (default all)')
    parser.add_argument('--ply-decimation', type=int, default=1)


def _formats(args: argparse.Namespace, metric: bool) -> list[str]:
    allowed = MULTI_FORMATS if args.multi_view else FORMATS
    default = ','.join(MULTI_FORMATS) if args.multi_view else (
        'png16,color' if metric else 'npz,color')
    formats = [f for f in (args.formats or default).split(',') if f]
    bad = [f for f in formats if f not in allowed]
    if bad:
        raise ValueError(f'--formats: unknown {bad}; allowed: {allowed}')
    if not metric and not args.multi_view and METRIC_FORMATS & set(formats):
        raise ValueError(f'{args.model} gives relative depth: png16 (millimetres) and ply are '
                         'metric formats; use npz, npy or color')
    return formats


def _run_multi_view(args: argparse.Namespace, formats: list[str], log: logging.Logger) -> int:
    from tt_depth_ros.api.multiview import MultiViewPredictor

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with MultiViewPredictor.from_pretrained(
            args.model, weights=args.weights, revision=args.revision, backend=args.backend,
            device_id=args.device_id, dtype=args.dtype,
            accept_license=True if args.accept_nc_license else None,
            process_res=args.process_res) as mv:
        r = mv(args.images)
    written = []
    if 'json' in formats:
        r.save_poses_json(out / 'poses.json', names=[Path(p).name for p in args.images])
        written.append('poses.json')
    if 'ply' in formats:
        n = r.save_ply(out / 'cloud.ply', decimation=args.ply_decimation, min_conf=args.conf_min)
        written.append(f'cloud.ply ({n} points)')
    if 'npz' in formats:
        r.save_npz(out / 'views.npz')
        written.append('views.npz')
    unit = 'm' if r.is_metric else '(relative)'
    for path, d, K in zip(args.images, r.depth, r.K):
        finite = d[np.isfinite(d)]
        med = f'{np.median(finite):.3f} {unit}' if finite.size else 'n/a'
        print(f'{path}: {d.shape[1]}x{d.shape[0]}, median depth {med}, fx {K[0, 0]:.1f} px')
    print(f'{len(r.depth)} views (reference {args.images[r.ref_view]}), network '
          f'{r.timings["network"] * 1000:.0f} ms -> {out}/{{{", ".join(written)}}}')
    return 0


def run(args: argparse.Namespace) -> int:
    """Predict every image; write the requested files; return an exit code."""
    spec = registry.model(args.model)
    formats = _formats(args, spec.kind.is_metric)
    if args.multi_view and not spec.kind.multi_view:
        raise ValueError(f'--multi-view needs an any-view or NESTED model, not {args.model}')
    if (args.fx is None) != (args.fy is None):
        raise ValueError('--fx and --fy go together')
    if args.camera_info and args.fx is not None:
        raise ValueError('give --fx/--fy/--cx/--cy or --camera-info, not both')
    if args.offline:
        os.environ['HF_HUB_OFFLINE'] = '1'
    from tt_depth_ros.api.depth import DepthPredictor
    from tt_depth_ros.api.io import load_rgb, read_camera_info_yaml

    log = logging.getLogger('tt-depth')
    if args.multi_view:
        if args.fx is not None or args.camera_info:
            raise ValueError('--multi-view estimates the cameras; intrinsics flags are for the '
                             'single-image mode')
        return _run_multi_view(args, formats, log)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with DepthPredictor.from_pretrained(
            args.model, weights=args.weights, revision=args.revision, backend=args.backend,
            device_id=args.device_id, dtype=args.dtype, logger=log,
            accept_license=True if args.accept_nc_license else None,
            onnx_provider=args.onnx_provider, process_res=args.process_res,
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
            if r.K_estimated is not None:
                note += f'  [estimated fx {r.K_estimated[0, 0]:.1f} px]'
            print(f'{path}: {r.depth.shape[1]}x{r.depth.shape[0]}, median depth {med}, '
                  f'sky {100 * r.sky.mean():.1f} %, engine {r.timings["engine"] * 1000:.0f} ms '
                  f'on {r.backend} -> {out}/{{{",".join(written)}}}{note}')
    return 0
