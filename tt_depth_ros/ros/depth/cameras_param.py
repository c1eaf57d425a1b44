"""The depth node's `cameras` parameter: which cameras one node (one engine) serves.

Empty (the default) is the single camera of every earlier release: `image` and `camera_info`
in the node's namespace, outputs beside them. Otherwise one entry per camera, either

* a namespace, `/front` (or `front`, relative to the node's): image `/front/image`,
  camera_info `/front/camera_info`, outputs `/front/depth`, ...; or
* `key=value` fields, comma-separated: `image=/front/image_raw,camera_info=/front/camera_info`
  with optional `ns=` (outputs; default the image topic's parent, as tt-depth-batch's
  `--camera`), `size=WIDTHxHEIGHT` (prepare the engine for it at configure, like
  expected_width/height), `priority=N` (N turns per scheduler round, default 1) and
  `max_rate_hz=F` (at most F frames a second from this camera, default no cap) and
  `transport=raw|compressed` (this camera's input_transport: `compressed` subscribes
  `<image>/compressed`).

Each camera gets exactly the topics, frames and scale state a single-camera node in its namespace
would have (ros/depth/camera.py). Pure parsing, no rclpy: the node's configure and
tt-depth-batch's parameter check both call `parse_cameras`.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Optional

SINGLE_KEY = 'camera'
"""The camera key of a node without `cameras` (CameraInfo store, log lines): as before."""
FIELDS = ('image', 'camera_info', 'ns', 'size', 'priority', 'max_rate_hz', 'transport')
TRANSPORTS = ('raw', 'compressed')
MAX_PRIORITY = 16


@dataclass(frozen=True)
class CameraSpec:
    """One camera of a depth node.

    Attributes:
        key: Unique name in logs and /diagnostics ('camera' for the single camera, else its
            output namespace).
        image: Image topic (the node subscribes `image/compressed` for compressed input).
        camera_info: CameraInfo topic.
        ns: Output namespace ('' = the node's own: the single camera).
        size: (width, height) to prepare at configure, or None (the node-wide expected size).
        priority: Turns per scheduler round (ros/runtime/scheduler.py).
        max_rate_hz: Largest frame rate taken from this camera; 0 = no cap.
        transport: 'raw' or 'compressed'; '' = the node's input_transport.
    """

    key: str
    image: str
    camera_info: str
    ns: str = ''
    size: Optional[tuple[int, int]] = None
    priority: int = 1
    max_rate_hz: float = 0.0
    transport: str = ''

    def output(self, relative: str) -> str:
        """The topic of a node output name in this camera's namespace ('depth' -> '/f/depth')."""
        return posixpath.join(self.ns, relative) if self.ns else relative

    @property
    def single(self) -> bool:
        """Whether this is the node's only camera from an empty `cameras` (today's topics)."""
        return not self.ns


SINGLE_CAMERA = CameraSpec(SINGLE_KEY, 'image', 'camera_info')
MIN_TRACED_SHAPES = 2
"""Traced shapes an engine keeps at least (a camera that changes size keeps the old one)."""


def shapes_needed(cameras: list[CameraSpec], default_size: Optional[tuple[int, int]]) -> int:
    """Prepared shapes (ttnn: traces) the cameras may need at once.

    One per distinct size, one per camera whose size is known only at its first frame, at least
    MIN_TRACED_SHAPES.
    """
    sizes, unknown = set(), 0
    for cam in cameras:
        size = cam.size or default_size
        if size:
            sizes.add(tuple(size))
        else:
            unknown += 1
    return max(MIN_TRACED_SHAPES, len(sizes) + unknown)


def _size(entry: str, text: str) -> tuple[int, int]:
    w, sep, h = text.lower().partition('x')
    if not sep or not w.isdigit() or not h.isdigit() or int(w) < 1 or int(h) < 1:
        raise ValueError(f'cameras entry {entry!r}: size={text!r} must be WIDTHxHEIGHT, e.g. '
                         'size=640x480')
    return int(w), int(h)


def _fields_entry(entry: str) -> CameraSpec:
    fields: dict[str, str] = {}
    for part in entry.split(','):
        name, sep, value = part.strip().partition('=')
        if not sep or name not in FIELDS or not value:
            raise ValueError(f'cameras entry {entry!r}: {part!r} is not one of '
                             f'{", ".join(f + "=..." for f in FIELDS)}')
        fields[name] = value
    if 'image' not in fields or 'camera_info' not in fields:
        raise ValueError(f'cameras entry {entry!r}: needs both image= and camera_info= (or give '
                         'just a namespace)')
    ns = fields.get('ns') or posixpath.dirname(fields['image'])
    if not ns or ns == '/':
        raise ValueError(f'cameras entry {entry!r}: the image topic has no parent namespace; '
                         'give ns= for the outputs')
    try:
        priority = int(fields.get('priority', 1))
        rate = float(fields.get('max_rate_hz', 0.0))
    except ValueError:
        raise ValueError(f'cameras entry {entry!r}: priority must be an integer and '
                         'max_rate_hz a number') from None
    if not 1 <= priority <= MAX_PRIORITY:
        raise ValueError(f'cameras entry {entry!r}: priority={priority} is outside '
                         f'[1, {MAX_PRIORITY}]')
    if not rate >= 0.0 or rate == float('inf'):
        raise ValueError(f'cameras entry {entry!r}: max_rate_hz={rate} must be >= 0 (0 = no cap)')
    size = _size(entry, fields['size']) if 'size' in fields else None
    transport = fields.get('transport', '')
    if transport and transport not in TRANSPORTS:
        raise ValueError(f'cameras entry {entry!r}: transport={transport!r} is not one of '
                         f'{list(TRANSPORTS)}')
    return CameraSpec(ns.rstrip('/'), fields['image'], fields['camera_info'], ns.rstrip('/'),
                      size, priority, rate, transport)


def parse_cameras(entries) -> list[CameraSpec]:
    """The cameras of a `cameras` parameter value (module docstring); ValueError names the entry.

    An empty value is the single camera (`SINGLE_CAMERA`).
    """
    entries = [str(e).strip() for e in entries]
    if not entries:
        return [SINGLE_CAMERA]
    cameras = []
    for entry in entries:
        if not entry:
            raise ValueError("cameras has an empty entry; give a namespace such as '/front' or "
                             "'image=/front/image_raw,camera_info=/front/camera_info'")
        if '=' in entry:
            cameras.append(_fields_entry(entry))
            continue
        if ',' in entry or entry.strip('/') == '':
            raise ValueError(f'cameras entry {entry!r}: a namespace such as /front, or '
                             'image=...,camera_info=... fields')
        ns = entry.rstrip('/')
        cameras.append(CameraSpec(ns, posixpath.join(ns, 'image'),
                                  posixpath.join(ns, 'camera_info'), ns))
    seen: dict[str, str] = {}
    for cam in cameras:
        for topic in (cam.image, cam.camera_info):
            if topic in seen:
                raise ValueError(f'cameras: topic {topic} is used by two cameras '
                                 f'({seen[topic]} and {cam.key}); each camera needs its own')
            seen[topic] = cam.key
    keys = [c.key for c in cameras]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f'cameras: output namespace {dup[0]} is given twice; two cameras would '
                         'publish on the same topics (give each its own ns=)')
    return cameras
