"""PyTorch backend (CPU and CUDA) behind the Engine interface, shared by DA3 and DUSt3R.

The engine owns the upload (uint8 HxWx3 -> device), the ImageNet normalisation (on the device, in
fp32), the forward under `torch.inference_mode`, and the readback to float32 numpy. What the
network does with the normalised views is a model-specific `run(model, views) -> {name: tensor}`
given by the builder (engines/torch/da3.py, engines/torch/dust3r.py), which also casts the weights.

On CUDA, `cuda_graphs=True` captures one graph per prepared (H, W): static device input buffers,
upload by copy, `graph.replay()`, static outputs. Attention is torch SDPA (models/layers).

On CPU the engine (once per process, glibc only) raises malloc's mmap and trim thresholds so the
tens of MB of activations freed after one layer are reused by the next instead of being returned to
the kernel and page-faulted back in (~75k page faults, ~10 % of the CPU time per DA3 forward). This
is the same effect as the jemalloc/tcmalloc advice of PyTorch's CPU performance guide; the cost is
that freed memory stays in the process. So whatever frees a lot at once gives it back explicitly
with `release_free_memory()` (`malloc_trim(0)`, every arena): the factory after a build (the
checkpoint's tensors are gone by then) and `close()` after dropping the model, so a lifecycle
cleanup returns RSS to about where configure started. `tune_malloc=False` leaves malloc alone.
"""
from __future__ import annotations

import ctypes
import gc
import logging
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from torch import nn

from tt_depth_ros.engines.base import ANY_VIEWS, Engine, EngineInfo, Ticket, check_views
from tt_depth_ros.geometry.preprocess.da3_preprocess import IMAGENET_MEAN, IMAGENET_STD
from tt_depth_ros.geometry.preprocess.resize_map import ResizeMap

RunFn = Callable[[nn.Module, list[torch.Tensor]], dict[str, torch.Tensor]]
TORCH_DTYPE_BY_NAME = {'float32': torch.float32, 'bfloat16': torch.bfloat16,
                       'float16': torch.float16}

_log = logging.getLogger(__name__)
_MALLOC_TUNED: Optional[bool] = None
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3   # glibc mallopt parameters


def tune_cpu_malloc() -> bool:
    """Keep freed activation memory in the heap (glibc); True if applied. Idempotent."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED is None:
        try:
            libc = ctypes.CDLL('libc.so.6')
            _MALLOC_TUNED = bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
                                 and libc.mallopt(M_TRIM_THRESHOLD, 1 << 31))
        except (OSError, AttributeError):  # not glibc: nothing to tune
            _MALLOC_TUNED = False
    return _MALLOC_TUNED


def release_free_memory() -> bool:
    """Collect garbage and return free heap memory of every malloc arena to the OS (glibc).

    True when `malloc_trim` released something. A no-op elsewhere (returns False).
    """
    gc.collect()
    try:
        return bool(ctypes.CDLL('libc.so.6').malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


def parse_dtype(dtype: Any, device: str) -> torch.dtype:
    """Map None / 'float32' / 'bfloat16' / 'float16' / torch.dtype to a torch dtype for `device`.

    None is float32. float16 is CUDA only (CPU half kernels are slow or missing); bfloat16 runs on
    both. Raises ValueError for anything else.
    """
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        name = str(dtype).replace('torch.', '')
    else:
        name = str(dtype)
    if name not in TORCH_DTYPE_BY_NAME:
        raise ValueError(f'dtype={dtype!r}; allowed: {tuple(TORCH_DTYPE_BY_NAME)}')
    if name == 'float16' and not device.startswith('cuda'):
        raise ValueError("dtype='float16' is for torch-cuda only; use 'float32' or 'bfloat16' "
                         'on CPU')
    return TORCH_DTYPE_BY_NAME[name]


def _host_tensor(image: np.ndarray) -> torch.Tensor:
    """A torch view of a uint8 image (a copy when it is read-only or not C-contiguous)."""
    ok = image.flags.c_contiguous and image.flags.writeable
    return torch.from_numpy(image if ok else np.array(image, order='C'))


class TorchEngine(Engine):
    """Run a torch model on uint8 RGB views.

    Args:
        model: The network, weights loaded and cast by the builder (moved to `device` here).
        run: `run(model, views)`; views are (1, 3, H, W) float32 normalised tensors on the device;
            returns tensors at network resolution without the batch dimension.
        model_name: For `info`, e.g. 'da3metric-large'.
        num_views: Images per `infer` call (1 for DA3, 2 for DUSt3R, ANY_VIEWS: any number;
            no CUDA graphs then, since a graph fixes the count).
        device: 'cpu' or 'cuda:N'.
        dtype: Activation dtype name for `info` (the builder casts the weights).
        patch_size: Input sides must be positive multiples of this.
        cuda_graphs: Capture CUDA graphs per shape (CUDA only; default True there).
        mean: Per-channel mean of the (x/255 - mean) / std normalisation (ImageNet default;
            DUSt3R uses 0.5).
        std: Per-channel std of the normalisation.
        logger: Anything with `.info(str)`; module logger if None.
        details: Extra `info.details`.
        tune_malloc: On CPU, keep freed activations in the heap (module docstring).
        resize_on_device: Take camera-size images in `infer_camera` and run the upstream resize
            as matmuls on the device (`resizes_on_device`). None: on CUDA for a one-view engine;
            off on CPU, where OpenCV's banded host resize is several times cheaper than dense
            matmuls on the same cores (True there is for tests).
        run_batch: `run` for a batch of one-view frames: (B, 3, H, W) in, tensors WITH the
            batch dimension out; given, the engine `batches` (`submit_batch`, eager: a CUDA
            graph fixes the batch size).
    """

    def __init__(self, model: nn.Module, run: RunFn, *, model_name: str, num_views: int = 1,
                 device: str = 'cpu', dtype: str = 'float32', patch_size: int = 14,
                 cuda_graphs: Optional[bool] = None, logger: Optional[Any] = None,
                 details: Optional[dict] = None, mean: Sequence[float] = IMAGENET_MEAN,
                 std: Sequence[float] = IMAGENET_STD, tune_malloc: bool = True,
                 resize_on_device: Optional[bool] = None,
                 run_batch: Optional[RunFn] = None) -> None:
        self._device = torch.device(device)
        self._cuda = self._device.type == 'cuda'
        if cuda_graphs and not self._cuda:
            raise ValueError('cuda_graphs=True needs a CUDA device')
        if cuda_graphs and num_views == ANY_VIEWS:
            raise ValueError('cuda_graphs=True needs a fixed number of views (a graph captures '
                             'one count); build with num_views=N')
        self._graphs_on = (self._cuda and num_views != ANY_VIEWS if cuda_graphs is None
                           else bool(cuda_graphs))
        self._model = model.to(self._device).eval()
        self._run = run
        self._run_batch = run_batch
        self.batches = run_batch is not None and num_views == 1
        self._log = logger if logger is not None else _log
        self.num_views = num_views
        self._patch = patch_size
        self._mean = torch.tensor(mean, dtype=torch.float32, device=self._device).view(1, 3, 1, 1)
        self._std = torch.tensor(std, dtype=torch.float32, device=self._device).view(1, 3, 1, 1)
        self._graphs: dict[tuple[int, int], tuple] = {}
        self.resizes_on_device = (self._cuda if resize_on_device is None
                                  else bool(resize_on_device)) and num_views == 1
        self._resize_mats: dict[ResizeMap, list] = {}
        self._prepared: set[tuple[int, int]] = set()
        self._timings: dict[str, float] = {}
        self._closed = False
        backend = 'torch-cuda' if self._cuda else 'torch-cpu'
        info = {'cuda_graphs': self._graphs_on, 'resize_on_device': self.resizes_on_device,
                'threads': torch.get_num_threads(),
                'torch': torch.__version__,
                'malloc_tuned': bool(tune_malloc and not self._cuda and tune_cpu_malloc())}
        info.update(details or {})
        self._info = EngineInfo(backend=backend, device=str(self._device), dtype=dtype,
                                model=model_name, details=info)

    @property
    def info(self) -> EngineInfo:
        return self._info

    @property
    def model(self) -> nn.Module:
        """The wrapped network (for tests and tools)."""
        return self._model

    def _check_shape(self, shape: tuple[int, int]) -> tuple[int, int]:
        h, w = (int(v) for v in shape)
        p = self._patch
        if h < p or w < p or h % p or w % p:
            raise ValueError(f'input size {h}x{w}: both sides must be positive multiples of the '
                             f'{p} px patch (resize with the geometry preprocessing first)')
        return h, w

    def _normalise(self, img_u8: torch.Tensor) -> torch.Tensor:
        # (H, W, 3) uint8 -> (1, 3, H, W) float32, (x/255 - mean) / std
        x = img_u8.permute(2, 0, 1).unsqueeze(0).to(torch.float32) / 255.0
        return (x - self._mean) / self._std

    def _forward(self, inputs: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        return self._run(self._model, [self._normalise(t) for t in inputs])

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self._device)

    def prepare(self, shape: tuple[int, int]) -> None:
        """Validate (H, W); on CUDA warm up and capture a graph for it."""
        if self._closed:
            raise RuntimeError('engine is closed')
        shape = self._check_shape(shape)
        if shape in self._prepared:
            return
        if self._graphs_on:
            self._capture(shape)
        self._prepared.add(shape)

    def _capture(self, shape: tuple[int, int]) -> None:
        h, w = shape
        static_in = [torch.zeros((h, w, 3), dtype=torch.uint8, device=self._device)
                     for _ in range(self.num_views)]
        stream = torch.cuda.Stream(self._device)
        stream.wait_stream(torch.cuda.current_stream(self._device))
        with torch.no_grad(), torch.cuda.stream(stream):
            for _ in range(3):  # warm-up outside the graph (cuDNN / allocator)
                self._forward(static_in)
        torch.cuda.current_stream(self._device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_out = self._forward(static_in)
        self._graphs[shape] = (graph, static_in, static_out)
        self._log.info(f'{self._info.model}: captured a CUDA graph for {h}x{w}')

    def infer(self, *images: np.ndarray) -> dict[str, np.ndarray]:
        """Run on `num_views` uint8 (H, W, 3) RGB arrays; return float32 maps (see builder)."""
        if self._closed:
            raise RuntimeError('engine is closed')
        shape = check_views(images, self.num_views)
        if shape not in self._prepared:
            self.prepare(shape)
        t0 = time.perf_counter()
        host = [_host_tensor(im) for im in images]
        if shape in self._graphs:
            return self._replay(shape, host, t0)
        with torch.inference_mode():
            dev = [t.to(self._device) for t in host]
            return self._eager(dev, t0, {})

    def infer_camera(self, image: np.ndarray, resize: ResizeMap) -> dict[str, np.ndarray]:
        """`infer` of a camera-size image, resized on this engine's device (base.Engine).

        The resize steps run as fp32 matmuls with the uint8 store after each (resize_map.py);
        the network input is then the same uint8 image `infer` would have been given.
        """
        if self._closed:
            raise RuntimeError('engine is closed')
        if not self.resizes_on_device:
            return super().infer_camera(image, resize)
        check_views((image,), 1)
        if image.shape[:2] != resize.src_hw:
            raise ValueError(f'image {image.shape[:2]} is not the resize\'s camera size '
                             f'{resize.src_hw}')
        shape = resize.net_hw
        if shape not in self._prepared:
            self.prepare(shape)
        t0 = time.perf_counter()
        with torch.inference_mode():
            src = _host_tensor(image).to(self._device)
            self._sync()
            t_up = time.perf_counter()
            net = self._resample(src, resize)
            self._sync()
            stages = {'upload': t_up - t0, 'resample': time.perf_counter() - t_up}
            if shape in self._graphs:
                return self._replay(shape, [net], t0, stages)
            return self._eager([net], t0, stages)

    def submit_batch(self, images: list[np.ndarray],
                     resize: Optional[ResizeMap] = None) -> list[Ticket]:
        """Several one-view frames of one shape in one eager forward (base.Engine)."""
        if not self.batches or len(images) < 2:
            return super().submit_batch(images, resize=resize)
        if self._closed:
            raise RuntimeError('engine is closed')
        on_device = resize is not None and self.resizes_on_device
        if resize is not None and not on_device:
            raise NotImplementedError(f'{type(self).__name__} does not resize on its device '
                                      '(resizes_on_device is False): resize on the host')
        want = tuple(resize.src_hw) if on_device else tuple(images[0].shape[:2])
        for i, image in enumerate(images):
            check_views((image,), 1)
            if image.shape[:2] != want:
                raise ValueError(f'batch image {i}: size {image.shape[:2]}, expected {want} '
                                 '(a batch shares one shape)')
        shape = tuple(resize.net_hw) if on_device else want
        if shape not in self._prepared:
            self.prepare(shape)
        t0 = time.perf_counter()
        with torch.inference_mode():
            dev = [_host_tensor(im).to(self._device) for im in images]
            if on_device:
                dev = [self._resample(x, resize) for x in dev]
            # the same elementwise (x/255 - mean) / std as _normalise, per frame
            x = torch.stack(dev).permute(0, 3, 1, 2).to(torch.float32) / 255.0
            self._sync()
            t1 = time.perf_counter()
            out = self._run_batch(self._model, [(x - self._mean) / self._std])
            self._sync()
            t2 = time.perf_counter()
            host = {k: v.detach().to(torch.float32).cpu().numpy() for k, v in out.items()}
        self._timings = {'upload': t1 - t0, 'forward': t2 - t1,
                         'readback': time.perf_counter() - t2}
        return [Ticket({k: v[i] for k, v in host.items()}) for i in range(len(images))]

    def _resample(self, src: torch.Tensor, resize: ResizeMap) -> torch.Tensor:
        """(H, W, 3) uint8 on the device -> (h, w, 3) uint8 on the device (the map's steps)."""
        mats = self._resize_mats.get(resize)
        if mats is None:
            if len(self._resize_mats) >= 8:    # a node sees one or two camera sizes
                self._resize_mats.clear()
            mats = [(torch.from_numpy(np.array(s.rows)).to(self._device),
                     torch.from_numpy(np.array(s.cols.T)).to(self._device))
                    for s in resize.steps]
            self._resize_mats[resize] = mats
        x = src.permute(2, 0, 1).to(torch.float32)                     # (3, H, W)
        for rows, cols_t in mats:
            x = torch.matmul(torch.matmul(rows, x), cols_t).round_().clamp_(0.0, 255.0)
        return x.permute(1, 2, 0).to(torch.uint8).contiguous()

    def _replay(self, shape, inputs: list[torch.Tensor], t0: float,
                stages: Optional[dict] = None) -> dict[str, np.ndarray]:
        """Copy the inputs (host or device) into the shape's graph inputs, replay, read back."""
        graph, static_in, static_out = self._graphs[shape]
        for dst, src in zip(static_in, inputs):
            dst.copy_(src, non_blocking=False)
        self._sync()
        t1 = time.perf_counter()
        graph.replay()
        return self._read(static_out, t0, t1, stages or {})

    def _eager(self, dev: list[torch.Tensor], t0: float, stages: dict) -> dict[str, np.ndarray]:
        """Forward on device tensors (inside inference_mode), read back."""
        self._sync()
        t1 = time.perf_counter()
        out = self._forward(dev)
        return self._read(out, t0, t1, stages)

    def _read(self, out: dict, t0: float, t1: float, stages: dict) -> dict[str, np.ndarray]:
        self._sync()
        t2 = time.perf_counter()
        result = {k: v.detach().to(torch.float32).cpu().numpy() for k, v in out.items()}
        t3 = time.perf_counter()
        self._timings = {'upload': t1 - t0, **stages, 'forward': t2 - t1, 'readback': t3 - t2,
                         'total': t3 - t0}
        return result

    def close(self) -> None:
        """Drop graphs and the model; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._graphs.clear()
        self._prepared.clear()
        self._resize_mats.clear()
        self._model = None
        self._run = None
        if self._cuda:
            torch.cuda.empty_cache()
        release_free_memory()
