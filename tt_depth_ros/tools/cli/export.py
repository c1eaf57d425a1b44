"""`tt-depth export`: a DA3 model as a fixed-size file for an edge runtime, with a JSON sidecar.

    tt-depth export --model da3metric-large --size 280x504 --format onnx --out da3m_280x504.onnx

`--format onnx` writes `<out>.onnx`, `--format litert` `<out>.tflite` (LiteRT: Android, embedded;
engines/export/litert_da3.py), each with `<out stem>.json` (engines/export/sidecar.py), and prints
the parity measured at export against the torch-cpu fp32 engine (exit 1 when the depth PCC is
below the gate or, for LiteRT, the static mobile-GPU check failed: the file is kept, the sidecar
says so). `--camera WxH` picks the size the depth node and the API would use for that camera
instead of `--size`. Heavy imports (torch, onnx, litert-torch) happen inside `run`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tt_depth_ros.engines import registry

FORMATS = ('onnx', 'litert')
EXPORT_MODELS = registry.names(family='da3')
SUFFIX = {'onnx': '.onnx', 'litert': '.tflite'}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `export` options to `parser`."""
    parser.add_argument('--model', required=True, choices=EXPORT_MODELS,
                        help='DA3 model (engines/registry.py); NESTED: ONNX only')
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument('--size', help='fixed input HxW, multiples of 14 (e.g. 280x504)')
    size.add_argument('--camera', metavar='WxH',
                      help='camera resolution: export at the network size the frame path picks '
                           'for it (--process-res long side)')
    parser.add_argument('--process-res', type=int, default=504,
                        help='with --camera: long-side target of the resize (default 504)')
    parser.add_argument('--format', default='onnx', choices=FORMATS)
    parser.add_argument('--dtype', default='fp32', choices=('fp32', 'fp16'),
                        help='fp16: ONNX the backbone in half precision (heads fp32); LiteRT '
                             'float16 weights')
    parser.add_argument('--weights', help='weights file (default: HF cache, else pinned download)')
    parser.add_argument('--revision', help='Hugging Face revision (default: the pinned one)')
    parser.add_argument('--out', required=True,
                        help='output file (.onnx / .tflite); sidecar beside it')
    parser.add_argument('--opset', type=int, default=18,
                        help='ONNX opset (>= 17; default 18; onnx only)')
    parser.add_argument('--exporter', default='torchscript', choices=('torchscript', 'dynamo'),
                        help='torch.onnx exporter (default torchscript; onnx only)')
    parser.add_argument('--accept-license', action='store_true',
                        help='opt in to CC-BY-NC-4.0 weights (non-commercial)')


def _size(args: argparse.Namespace) -> tuple[int, int]:
    from tt_depth_ros.engines.export.size import camera_network_size, parse_size

    if args.size:
        return parse_size(args.size)
    w, _, h = str(args.camera).lower().partition('x')
    if not (w.isdigit() and h.isdigit()):
        raise ValueError(f'--camera {args.camera!r}: expected WxH, e.g. 640x480')
    return camera_network_size(int(w), int(h), args.process_res)


def run(args: argparse.Namespace) -> int:
    """Export; 0 on success, 1 when the parity gate (or the LiteRT GPU check) failed."""
    size = _size(args)
    import logging

    if not str(args.out).endswith(SUFFIX[args.format]):
        raise ValueError(f'--out {args.out}: a --format {args.format} file must end in '
                         f'{SUFFIX[args.format]}')
    log = logging.getLogger('tt-depth export')
    common = dict(dtype=args.dtype, weights=args.weights, revision=args.revision,
                  accept_license=args.accept_license or None, logger=log)
    if args.format == 'litert':
        from tt_depth_ros.engines.export.litert_da3 import export_da3_litert

        data = export_da3_litert(args.model, size, Path(args.out), **common)
    else:
        from tt_depth_ros.engines.export.onnx_da3 import export_da3_onnx

        data = export_da3_onnx(args.model, size, Path(args.out), opset=args.opset,
                               exporter=args.exporter, **common)
    par = data['parity']
    summary = {'out': str(args.out), 'format': args.format, 'size_hw': data['size_hw'],
               'dtype': data['dtype'], 'parity': par}
    if args.format == 'litert':
        check = data['gpu_delegate_check']
        summary.update(size_mb=data['exporter']['size_mb'],
                       convert_s=data['exporter']['convert_s'],
                       gpu_delegate_check={k: check[k] for k in (
                           'passed', 'max_rank', 'rejected_ops', 'resize_align_corners',
                           'analyzer_verdict')})
    print(json.dumps(summary, indent=2))
    if not par.get('passed'):
        print(f'tt-depth export: parity below the gate, not measured or the GPU check failed: '
              f'{par}', file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    """`tt-depth-export` console script (the same options as `tt-depth export`)."""
    import logging

    parser = argparse.ArgumentParser(prog='tt-depth-export', description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format='%(levelname)s %(name)s: %(message)s')
    try:
        return run(args)
    except (ValueError, RuntimeError, OSError) as e:
        print(f'tt-depth-export: error: {e}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
