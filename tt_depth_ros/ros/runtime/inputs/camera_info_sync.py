"""Each image gets the CameraInfo of ITS stamp, like image_transport's CameraSubscriber.

A camera publishes Image and CameraInfo as two topics with the same header stamp; they arrive in
either order, and the worker may process a frame while newer CameraInfos (another zoom, another
calibration, another resolution) have already arrived. Reading "the latest CameraInfo" then gives
a frame someone else's intrinsics (depth x2 after a focal change). So CameraInfos are
kept per camera in a small stamp-keyed cache (ros/runtime/inputs/stamp_cache.py) and looked up by
the image stamp:
- `exact` (default): the CameraInfo with exactly the image stamp; else the nearest one within
  `camera_info_tolerance_s`; the worker waits up to `camera_info_wait_s` for one that has not
  arrived yet (the wait ends as soon as a newer CameraInfo shows the exact one will not come).
  No match = the frame is skipped and counted (`rejected_camera_info_stamp`).
- `latest`: the newest CameraInfo whatever its stamp, for cameras that publish it rarely or with
  unrelated stamps; frames whose CameraInfo has another stamp are counted, not skipped.
Counters per outcome go to /diagnostics (`camera_info_exact`, `camera_info_nearest`,
`camera_info_other_stamp`, `camera_info_unmatched`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from tt_depth_ros.ros.runtime.inputs.stamp_cache import StampedCache
from tt_depth_ros.ros.runtime.params import ParamSpec

CAMERA_INFO_SYNC_PARAMS = (
    ParamSpec('camera_info_sync', 'exact', "'exact': each image uses the CameraInfo with its "
              'stamp (else the nearest within camera_info_tolerance_s; none = frame skipped, '
              "counted); 'latest': the newest CameraInfo whatever its stamp (cameras that "
              'publish it rarely).', choices=('exact', 'latest'), runtime=True),
    ParamSpec('camera_info_tolerance_s', 0.0, "camera_info_sync='exact': largest stamp "
              'difference accepted when no CameraInfo has the exact stamp, seconds.',
              float_range=(0.0, 10.0), runtime=True),
    ParamSpec('camera_info_wait_s', 0.2, "camera_info_sync='exact': how long the worker waits "
              "for a CameraInfo that arrives after its image, seconds.",
              float_range=(0.0, 10.0), runtime=True),
)

CACHE_SIZE = 32   # CameraInfos kept per camera (about 1 s at 30 Hz)
TIME_JUMP_S = 1.0   # an older CameraInfo stamp than this below the newest = the clock jumped


@dataclass(frozen=True)
class InfoMatch:
    """The CameraInfo chosen for one image and how it was chosen."""

    msg: object        # sensor_msgs/CameraInfo
    geometry: object   # CameraGeometry, or the CameraInfoError of an unusable message
    how: str           # 'exact' | 'nearest' | 'latest'
    skew_s: float      # CameraInfo stamp - image stamp


class CameraInfoStore:
    """Per-camera stamp-keyed CameraInfo caches with match counters (thread-safe)."""

    COUNTERS = ('exact', 'nearest', 'other_stamp', 'unmatched')

    def __init__(self, capacity: int = CACHE_SIZE) -> None:
        self._cap = capacity
        self._caches: dict[str, StampedCache] = {}
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(self.COUNTERS, 0)

    def _cache(self, key: str) -> StampedCache:
        with self._lock:
            if key not in self._caches:
                self._caches[key] = StampedCache(self._cap)
            return self._caches[key]

    def put(self, key: str, stamp_ns: int, msg, geometry) -> None:
        """Store one CameraInfo (`geometry` = its CameraGeometry or its CameraInfoError).

        A stamp more than TIME_JUMP_S older than the newest cached one means the clock jumped
        back (bag loop, restarted simulation): the stale "future" CameraInfos are dropped, else
        they would end every wait for a CameraInfo that arrives after its image.
        """
        cache = self._cache(key)
        newest = cache.latest()
        if newest is not None and newest[0] - int(stamp_ns) > TIME_JUMP_S * 1e9:
            cache.clear()
        cache.put(stamp_ns, (msg, geometry))

    def has_any(self, key: str) -> bool:
        """Whether any CameraInfo of `key` is cached."""
        return len(self._cache(key)) > 0

    def wait_any(self, key: str, wait_s: float) -> bool:
        """Whether a CameraInfo of `key` is cached, waiting up to `wait_s` for the first one."""
        return self._cache(key).nearest(-1, 1 << 62, wait_s) is not None

    def lookup(self, key: str, stamp_ns: int, mode: str, tolerance_s: float,
               wait_s: float) -> InfoMatch | None:
        """The CameraInfo for an image of `key` stamped `stamp_ns` (None: no match, counted).

        Args:
            key: camera key ('camera', 'camera1', ...).
            stamp_ns: the image header stamp in nanoseconds.
            mode: 'exact' or 'latest' (module docstring).
            tolerance_s: largest accepted stamp difference when the exact stamp is missing.
            wait_s: bounded wait for a CameraInfo arriving after the image ('exact').
        """
        cache = self._cache(key)
        if mode == 'latest':
            found, how = cache.latest(), 'latest'
        else:
            found = cache.nearest(stamp_ns, int(round(tolerance_s * 1e9)), wait_s)
            how = 'exact' if found is not None and found[0] == int(stamp_ns) else 'nearest'
        with self._lock:
            if found is None:
                self._counts['unmatched'] += 1
                return None
            stamp, (msg, geom) = found
            counter = 'other_stamp' if how == 'latest' and stamp != int(stamp_ns) else (
                'exact' if how == 'latest' else how)
            self._counts[counter] += 1
        return InfoMatch(msg, geom, how, (stamp - int(stamp_ns)) / 1e9)

    def nearest_skew_s(self, key: str, stamp_ns: int) -> float | None:
        """Stamp difference of the closest cached CameraInfo (for the reject message)."""
        found = self._cache(key).nearest(stamp_ns, 1 << 62)
        return None if found is None else (found[0] - int(stamp_ns)) / 1e9

    def counters(self) -> dict[str, int]:
        """Match counters for /diagnostics (`camera_info_<outcome>`)."""
        with self._lock:
            return {f'camera_info_{k}': v for k, v in self._counts.items()}

    def clear(self) -> None:
        """Forget every cached CameraInfo (cleanup); the counters are kept until reset()."""
        with self._lock:
            caches = list(self._caches.values())
        for c in caches:
            c.clear()

    def reset(self) -> None:
        """Forget CameraInfos and counters (new configure)."""
        self.clear()
        with self._lock:
            self._counts = dict.fromkeys(self.COUNTERS, 0)
