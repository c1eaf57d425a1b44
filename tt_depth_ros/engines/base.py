"""The one small interface every inference backend implements (torch CPU/CUDA, ttnn).

An engine owns one network on one device. The caller hands it uint8 RGB images already resized to
the network grid; the engine normalises them (on the device where it can) and returns float32 raw
maps at network resolution. An engine whose device can also run the upstream resize says so
(`resizes_on_device`) and takes camera-size images with the resize as matrices (`infer_camera`),
which takes the largest per-frame cost off the host. Everything else camera-related (intrinsics,
metric scale, sky, clouds, poses) lives in `geometry/`, so a new backend only has to reproduce
the network.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tt_depth_ros.geometry.preprocess.image_checks import check_rgb_u8
from tt_depth_ros.geometry.preprocess.resize_map import ResizeMap

ANY_VIEWS = 0
"""`num_views` of an engine that takes any number (>= 1) of same-size views per call."""
BACKENDS = ('ttnn', 'torch-cuda', 'torch-cpu')
"""Every backend an Engine can run on, in the order `backend: auto` tries them."""


@dataclass(frozen=True)
class EngineInfo:
    """What runs the network, for logs and diagnostics."""

    backend: str          # 'torch-cpu' | 'torch-cuda' | 'ttnn'
    device: str           # e.g. 'cpu', 'cuda:0', 'p150:0'
    dtype: str            # activations dtype, e.g. 'float32', 'bfloat16'
    model: str            # e.g. 'da3metric-large', 'dust3r-vitl-512-dpt'
    details: dict = field(default_factory=dict)


class Engine(abc.ABC):
    """Backend-neutral network runner.

    Lifecycle: construct (weights loaded) -> `prepare(shape)` for every input shape that will be
    used (compile / warm / capture) -> `infer(...)` per frame -> `close()`. An engine that
    `resizes_on_device` takes `prepare_camera(resize)` and `infer_camera(image, resize)` too.

    `infer` takes `num_views` uint8 arrays of shape (H, W, 3), RGB, C-contiguous, at a prepared
    shape (1 view for DA3, 2 for DUSt3R, any number for an ANY_VIEWS engine), and returns a dict
    of float32 numpy arrays at network resolution (names are model-specific and documented by each
    engine, e.g. DA3: 'depth', 'sky'). An unprepared shape is prepared on first use (logged by the
    caller); a wrong dtype or channel count raises ValueError naming the input.
    """

    num_views: int = 1
    resizes_on_device: bool = False
    """Whether `infer_camera` runs the resize on the engine's device (the frame path then hands
    over camera-size images). False: callers resize on the host and call `infer`."""
    pipelines: bool = False
    """Whether `submit` returns before the frame is done (ttnn with two command queues): a
    throughput-bound caller then submits the next frame before collecting this one."""
    batches: bool = False
    """Whether `submit_batch` runs several same-shape one-view frames in one forward (torch
    single-view DA3, onnxruntime files with a batch axis). The results equal one-at-a-time to
    within float rounding, not bit for bit (the matmuls block differently per batch size), so
    callers batch only when asked to."""
    max_prepared: Optional[int] = None
    """How many prepared shapes the engine keeps at once (ttnn: traces); None = no limit."""

    @abc.abstractmethod
    def prepare(self, shape: tuple[int, int]) -> None:
        """Get ready for (H, W) inputs: compile, warm up, capture a trace if the backend has one."""

    @abc.abstractmethod
    def infer(self, *images: np.ndarray) -> dict[str, np.ndarray]:
        """Run the network on `num_views` uint8 HxWx3 RGB images; return float32 raw maps."""

    def prepare_camera(self, resize: ResizeMap) -> None:
        """Get ready for `infer_camera` with `resize`.

        The default prepares its network size; an engine that traces the resize with the
        network (ttnn) prepares the pair.
        """
        self.prepare(tuple(resize.net_hw))

    def infer_camera(self, image: np.ndarray, resize: ResizeMap) -> dict[str, np.ndarray]:
        """`infer` of one camera-size uint8 RGB image, resized by `resize` on the device.

        Same outputs as `infer(resize.apply(image))` (to within the resize's rounding ties).
        Engines with `resizes_on_device` False raise NotImplementedError.
        """
        raise NotImplementedError(f'{type(self).__name__} does not resize on its device '
                                  '(resizes_on_device is False): resize on the host and call '
                                  'infer')

    def submit(self, *images: np.ndarray, resize: Optional[ResizeMap] = None) -> 'Ticket':
        """Hand over one frame (`infer`, or `infer_camera` with `resize`); `collect` its outputs.

        An engine with a second command queue (ttnn) uploads this frame while the device still
        runs the previous one, so a caller may submit frame N+1 before collecting frame N. The
        default runs the frame now. Every ticket is collected once, in any order.
        """
        return Ticket(self.infer_camera(images[0], resize) if resize is not None
                      else self.infer(*images))

    def submit_batch(self, images: list[np.ndarray],
                     resize: Optional[ResizeMap] = None) -> list['Ticket']:
        """Hand over several one-view frames of one shape (one camera each); a ticket per frame.

        An engine that `batches` runs them in one forward; the default submits them in turn.
        """
        return [self.submit(image, resize=resize) for image in images]

    def collect(self, ticket: 'Ticket') -> dict[str, np.ndarray]:
        """The outputs of a submitted frame (waits for it); a second collect raises."""
        return ticket.take()

    @abc.abstractmethod
    def close(self) -> None:
        """Release device memory, traces and the device. Idempotent."""

    @property
    @abc.abstractmethod
    def info(self) -> EngineInfo:
        """Backend, device, dtype and model, for logs and diagnostics."""

    @property
    def last_timings(self) -> dict[str, float]:
        """Per-stage wall times of the last `infer` call, seconds (upload, forward, readback...)."""
        return dict(getattr(self, '_timings', {}))

    def __enter__(self) -> 'Engine':
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Ticket:
    """A submitted frame: its outputs once ready (`result`), taken by `Engine.collect` once."""

    def __init__(self, result: Optional[dict] = None):
        self.result = result
        self.collected = False

    def take(self) -> dict[str, np.ndarray]:
        if self.collected:
            raise RuntimeError('this frame was already collected (collect each ticket once)')
        if self.result is None:
            raise RuntimeError('this frame has no outputs yet (collect it from its engine)')
        self.collected = True
        return self.result


def check_views(images: tuple[np.ndarray, ...], num_views: int) -> tuple[int, int]:
    """Validate engine inputs; return their common (H, W). ValueError names the bad input.

    `num_views` ANY_VIEWS accepts any number of images but at least one.
    """
    if len(images) != num_views and not (num_views == ANY_VIEWS and images):
        want = 'at least 1' if num_views == ANY_VIEWS else num_views
        raise ValueError(f'engine expects {want} image(s), got {len(images)}')
    shape = None
    for i, img in enumerate(images):
        check_rgb_u8(img, f'image {i}')
        if shape is None:
            shape = img.shape[:2]
        elif img.shape[:2] != shape:
            raise ValueError(f'image {i}: shape {img.shape[:2]} differs from image 0 {shape}; '
                             'all views must share one network size')
    return int(shape[0]), int(shape[1])
