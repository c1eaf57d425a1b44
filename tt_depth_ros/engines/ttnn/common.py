"""Small shared pieces of the ttnn modules: uploads and the linear layer (torch `nn.Linear`).

Weight preprocessing is pure (torch in, torch out); uploads happen once at engine build.
Engine code names the module `ttnn` so devtools/ttnn/conformance/ can audit every use.

Buffer sharing (ttnn 0.81.1, seen by devtools/ttnn/dryrun/): `reshape` returns a view on its input's
device buffer when the tile rows stay whole (row-major always; TILE when the last dim is kept
and the second-to-last is kept or stays a multiple of 32), a full-range `slice` returns its input
itself, and `deallocate(t)` defaults to force=True, which frees the buffer under every tensor
sharing it. So a tensor that may have a live view is released with `deallocate(t, force=False)`
(frees only an unshared buffer); the view's own deallocate frees the memory later.
"""
from __future__ import annotations

import torch

from tt_depth_ros.engines.ttnn.config import TILE, linear_program_config, pad_to  # noqa: F401


def upload(ctx, t: torch.Tensor, dtype=None, layout=None):
    """Host tensor -> device tensor (TILE, bf16 unless told)."""
    ttnn = ctx.ttnn
    return ttnn.from_torch(t.detach().to(torch.float32).contiguous(),
                           dtype=ttnn.bfloat16 if dtype is None else dtype,
                           layout=ttnn.TILE_LAYOUT if layout is None else layout,
                           device=ctx.device, memory_config=ttnn.DRAM_MEMORY_CONFIG)


def upload_weight(ctx, t: torch.Tensor, dtype=None):
    """Upload a weight through ttnn's .tensorbin cache when the engine has one (weight_cache.py)."""
    ttnn = ctx.ttnn
    cache = getattr(ctx, 'weight_cache', None)
    if cache is None:
        return upload(ctx, t, dtype)
    t = t.detach().to(torch.float32).contiguous()
    return ttnn.as_tensor(t, dtype=ttnn.bfloat16 if dtype is None else dtype,
                          layout=ttnn.TILE_LAYOUT, device=ctx.device,
                          memory_config=ttnn.DRAM_MEMORY_CONFIG,
                          cache_file_name=cache.next_name(t.shape))


def image_to_tile(ctx, image):
    """Persistent uint8 input (1, 1, H*W, 3) ROW_MAJOR -> bf16 TILE for the patch-embed conv.

    ttnn 0.81.1 cannot tilize uint8 (tilize_with_val_padding accepts bf16/fp32/int32/uint32/
    uint16 only), so the device typecasts the row-major uint8 to bf16 (exact for 0..255) and then
    tilizes. Bytes over PCIe per frame, 280x504 RGB: uint8 (this) 423 KB; host bf16 with channels
    padded to 4 (row-major, tilized on device) 1.13 MB; host-tilized bf16 (3 -> 32 lanes) 9.0 MB.
    The device-side cost is one extra row-major pass over 6 B/pixel next to the tilized 64 B/pixel.
    """
    ttnn = ctx.ttnn
    rm = ttnn.typecast(image, ttnn.bfloat16)
    tile = ttnn.to_layout(rm, ttnn.TILE_LAYOUT)
    ttnn.deallocate(rm)
    return tile


def exact_kernel_config(ctx):
    """HiFi4 with fp32 accumulation: the compute config of the camera resize's matmuls."""
    ttnn = ctx.ttnn
    return ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                            math_approx_mode=False, fp32_dest_acc_en=True,
                                            packer_l1_acc=True)


def linear_params(weight: torch.Tensor, bias: torch.Tensor | None,
                  scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Torch Linear (out, in) -> ttnn [in, out] and (1, out).

    `scale` folds a following per-channel multiply (LayerScale) into the columns:
    (x W^T + b) * g = x (W^T g) + b g.
    """
    w = weight.detach().to(torch.float32).t().contiguous()
    b = None if bias is None else bias.detach().to(torch.float32)[None].contiguous()
    if scale is not None:
        g = scale.detach().to(torch.float32)
        w = w * g[None]
        b = b * g[None] if b is not None else None
    return w, b


class TtLinear:
    """y = x W^T + b on device, HiFi4/fp32-acc by default.

    Args: ctx, w_t [in, out], b (1, out) or None, activation ('gelu'/'relu'), group (weight
    group of precision.py: float32 weights when the preset names it), out ('residual', 'head',
    'inner': output dtype from the preset; 'float32'; None = the input's dtype), role (matmul
    role of precision.ROLES: its fidelity and accumulation; None = the preset's own).
    """

    def __init__(self, ctx, w_t: torch.Tensor, b: torch.Tensor | None, activation=None,
                 group: str | None = None, out: str | None = None, role: str | None = None):
        ttnn = ctx.ttnn
        self.ctx = ctx
        self.weight = upload_weight(ctx, ctx.precision.host_weight(w_t, group, role),
                                    ctx.precision.weights_dtype(ttnn, group, role))
        self.bias = None if b is None else upload_weight(
            ctx, b, ctx.precision.bias_dtype(ttnn, group, role))
        self.activation = activation
        self.role = role
        self.shape = (int(w_t.shape[0]), int(w_t.shape[1]))        # [in, out]
        self.out_dtype = (None if out is None else ttnn.float32 if out == 'float32' else
                          ctx.precision.act(ttnn, out))
        inner = ctx.precision.inner_memory(ttnn) if out == 'inner' else None
        self.out_memory = (ctx.precision.residual_memory(ttnn) if out == 'residual' else
                           ttnn.DRAM_MEMORY_CONFIG if inner is None else inner)

    def __call__(self, x, program_config=None, rows: int | None = None, memory_config=None):
        """Apply to x (.., rows, in).

        rows: lets a program-config preset size the matmul; memory_config: instead of the
        output memory of `out`.
        """
        ttnn = self.ctx.ttnn
        if program_config is None and rows and self.role and self.ctx.precision.program_configs:
            program_config = self.program_config(rows)
        activation = self.activation
        if program_config is not None and activation == 'gelu':
            activation = None                  # the program configs fuse GELU (config.py)
        return ttnn.linear(x, self.weight, bias=self.bias, activation=activation,
                           dtype=self.out_dtype,
                           compute_kernel_config=self.ctx.matmul_config(self.role),
                           program_config=program_config,
                           memory_config=self.out_memory if memory_config is None
                           else memory_config)

    @property
    def fp32_acc(self) -> bool:
        """Whether this linear's role accumulates in fp32 (its program configs must agree)."""
        return self.ctx.precision.matmul_setting(self.role)[1]

    def program_config(self, rows: int):
        """The 2D-multicast config of this linear at `rows` token rows (config.py)."""
        k, n = self.shape
        return linear_program_config(self.ctx.ttnn, self.ctx.grid, rows, k, n,
                                     gelu=self.activation == 'gelu', fp32_acc=self.fp32_acc)

    def release(self) -> None:
        ttnn = self.ctx.ttnn
        for t in (self.weight, self.bias):
            if t is not None:
                ttnn.deallocate(t)
        self.weight = self.bias = None


class TtLayerNorm:
    """LayerNorm with an explicit eps (ttnn defaults to 1e-12; docs/ttnn.md §5).

    Output dtype = input dtype; gamma/beta are float32 when the preset names group 'norm'.
    """

    def __init__(self, ctx, weight: torch.Tensor, bias: torch.Tensor, eps: float):
        self.ctx = ctx
        self.eps = float(eps)
        dt = ctx.precision.bias_dtype(ctx.ttnn, 'norm')
        self.weight = upload_weight(ctx, weight.detach()[None], dt)
        self.bias = upload_weight(ctx, bias.detach()[None], dt)

    def __call__(self, x, residual=None, memory_config=None, program_config=None):
        """LN(x [+ residual]) into `memory_config` (None: DRAM).

        program_config: a block-sharded x's (config.BlockShard.layer_norm_config).
        """
        ttnn = self.ctx.ttnn
        return ttnn.layer_norm(x, epsilon=self.eps, weight=self.weight, bias=self.bias,
                               residual_input_tensor=residual,
                               memory_config=memory_config or ttnn.DRAM_MEMORY_CONFIG,
                               program_config=program_config,
                               compute_kernel_config=self.ctx.matmul_config())

    def release(self) -> None:
        self.ctx.ttnn.deallocate(self.weight)
        self.ctx.ttnn.deallocate(self.bias)
