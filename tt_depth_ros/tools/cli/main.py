"""`tt-depth` console command: `tt-depth predict [da3] IMG...`, `tt-depth predict dust3r IMG1 IMG2`.

`tt-depth export --model M --size HxW --format onnx|litert --out F.onnx|F.tflite`
(tools/cli/export.py) writes a fixed-size file for an edge runtime with its JSON sidecar.

Each `predict` model is a module with `add_arguments(parser)` and `run(args) -> int`:
`tools/cli/predict_da3.py` and `tools/cli/predict_dust3r.py` (DUSt3R's owner). They are imported
when the
parser is built; heavy imports (torch) happen inside `run`. `predict` without a model name means
da3.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Optional, Sequence

PREDICTORS = {
    'da3': ('tt_depth_ros.tools.cli.predict_da3',
            'Depth Anything 3 family: depth per image, or --multi-view depth + cameras'),
    'dust3r': ('tt_depth_ros.tools.cli.predict_dust3r', 'two-view pointmaps and relative pose'),
}


def _unavailable(name: str, err: Exception):
    def run(args: argparse.Namespace) -> int:
        print(f'tt-depth predict {name}: not available in this build ({err})', file=sys.stderr)
        return 2
    return run


def build_parser() -> argparse.ArgumentParser:
    """The full `tt-depth` argument parser."""
    parser = argparse.ArgumentParser(prog='tt-depth', description=__doc__.splitlines()[0])
    parser.add_argument('-v', '--verbose', action='store_true', help='debug logging')
    sub = parser.add_subparsers(dest='command', required=True)
    predict = sub.add_parser('predict', help='run a model on image files')
    models = predict.add_subparsers(dest='model_family', required=True)
    for name, (module, help_text) in PREDICTORS.items():
        p = models.add_parser(name, help=help_text)
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
            p.add_argument('rest', nargs=argparse.REMAINDER)
            p.set_defaults(func=_unavailable(name, e))
            continue
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
    from tt_depth_ros.tools.cli import export
    exp = sub.add_parser('export', help='a DA3 model as a fixed-size ONNX or LiteRT file '
                                        '(+ JSON sidecar)')
    export.add_arguments(exp)
    exp.set_defaults(func=export.run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `tt-depth` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == 'predict' and argv[1] not in PREDICTORS \
            and argv[1] not in ('-h', '--help'):
        argv.insert(1, 'da3')  # `tt-depth predict IMG...` means da3
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format='%(levelname)s %(name)s: %(message)s')
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, RuntimeError, OSError) as e:
        print(f'tt-depth: error: {e}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
