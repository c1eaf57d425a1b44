"""DA3 metric network on device: backbone + head, per-shape constants (torch `models/da3/model.py`).

Output per frame: one (1, 1, H*W, 2) float32 tensor [raw depth = exp(logit), sky = relu(logit)],
read back once and split into the torch engine's {'depth', 'sky'} (H, W) maps.
"""
from __future__ import annotations

import numpy as np

from tt_depth_ros.engines.ttnn.common import image_to_tile
from tt_depth_ros.engines.ttnn.da3.backbone import TtDA3Backbone
from tt_depth_ros.engines.ttnn.da3.head import TtDA3Head
from tt_depth_ros.engines.ttnn.shape_state import attention_state, release_attention_state


class TtDA3:
    """Builds from a checkpoint state dict whose keys are stripped of 'model.'."""

    num_views = 1
    patch = 14
    prefix_tokens = 1

    def __init__(self, ctx, sd, cfg):
        self.ctx, self.cfg = ctx, cfg
        self.backbone = TtDA3Backbone(ctx, sd, cfg)
        self.head = TtDA3Head(ctx, sd, cfg)

    @staticmethod
    def programs_estimate(cfg, precision) -> int:
        """Upper bound on device programs per traced forward (trace region sizing).

        The real ttnn 0.81.1 counts the programs in the dry run (devtools/ttnn/dryrun; the
        driver's --json records them per size): a little over 15 per ViT block, plus a fixed
        part for the patch embed, the taps and the DPT head (its convs are several programs
        each, more at larger sizes), plus one or two resize steps for a camera resized on the
        device. Bound: 16 per block + 384 (tiny 448, Large 768), with room for the fixed part at
        every golden size, for every preset (DA3's levers move a block's count by one or two
        either way); test_ttnn_dryrun checks it against every count.
        """
        return 16 * (max(cfg.out_layers) + 1) + 384

    def build_shape(self, sc) -> dict:
        state = {'attn': attention_state(self.ctx, sc)}
        state.update(self.backbone.shape_constants(sc))
        state.update(self.head.shape_constants(sc))
        return state

    def forward(self, sc, state, inputs, camera=None):
        """inputs: the persistent uint8 image; camera: its TtCameraResize to sc's size, or None."""
        ttnn = self.ctx.ttnn
        img = camera(inputs[0]) if camera is not None else image_to_tile(self.ctx, inputs[0])
        taps = self.backbone(img, sc, state)
        ttnn.deallocate(img)
        return self.head(taps, sc, state)

    def unpack(self, out: np.ndarray, sc) -> dict[str, np.ndarray]:
        maps = out.reshape(sc.height, sc.width, 2)
        return {'depth': np.ascontiguousarray(maps[..., 0], dtype=np.float32),
                'sky': np.ascontiguousarray(maps[..., 1], dtype=np.float32)}

    def release_shape(self, state) -> None:
        ttnn = self.ctx.ttnn
        release_attention_state(self.ctx, state['attn'])
        ttnn.deallocate(state['pos'])
        ttnn.deallocate(state['tail'])
        self.head.release_shape(state)

    def release(self) -> None:
        self.backbone.release()
        self.head.release()
