"""Which stage of a forward a recorded device op belongs to, read from its call stack.

The measured ports report time per stage (the DUSt3R port: encoder, decoder, DPT head; the DA3
port ran its backbone alone on the device), so the estimate is split the same way. A record's
`stack` holds the innermost project frames ('tt_depth_ros/engines/ttnn/da3/head.py:63
(__call__)', ...); the stage is the first rule below that one of its frames matches.
"""
from __future__ import annotations

STAGES = ('camera resize', 'encoder', 'decoder', 'head', 'other')

# (stage, file suffixes or '(function)' names any frame of the op's stack may match), in order
_RULES = (
    ('camera resize', ('layers/camera_resize.py',)),
    ('head', ('da3/head.py', 'dust3r/dpt_head.py', 'layers/dpt_neck.py', 'layers/dpt_fusion.py',
              'layers/dpt_output.py', 'layers/resize.py', 'layers/pixel_pack.py')),
    ('decoder', ('dust3r/decoder_block.py',)),
    ('encoder', ('da3/backbone.py', '(_encode)', '(_embed)')),
)


def stage_of(record: dict) -> str:
    """One of STAGES for a device-op record (its 'stack'); 'other' when no rule matches.

    'encoder' is DA3's backbone too; 'other' holds the glue between stages (DUSt3R's decoder
    embedding and final norms, the image upload's conversion).
    """
    frames = record.get('stack') or []
    for stage, keys in _RULES:
        for frame in frames:
            path, _, func = frame.partition(' ')
            if any(path.rsplit(':', 1)[0].endswith(k) or func == k for k in keys):
                return stage
    return 'other'
