"""Temporal mode of the pair node: keyframe policy and keyframe-to-keyframe pose chaining.

One camera; each new frame is paired with the current keyframe (view 1 = keyframe, view 2 = frame),
PnP gives T_key<-frame, and the trajectory is T_odom<-frame = T_odom<-key @ T_key<-frame in an
odom-like frame whose origin is the first keyframe's camera (so the first pose is the identity by
definition, not a placeholder). A frame becomes the next keyframe every `every_n` frames or when its
motion from the keyframe exceeds a rotation or translation threshold.

Units: every DUSt3R pair has its own arbitrary scale. To chain pairs consistently each keyframe
keeps a reference depth map (its own z, in trajectory units, on the network grid): the first from
the first pair (defining the unit) or from a metric depth image, later ones propagated from the pair
that promoted them. A pair's scale is the median ratio between that reference and the keyframe's z
in the pair (geometry/pointmap/scale.py), so the whole trajectory shares one unit — metres when the
reference is metric.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tt_depth_ros.geometry.pointmap.scale import ScaleResult, median_ratio_scale
from tt_depth_ros.geometry.pose.se3 import angle_deg


def rotation_angle_deg(R: np.ndarray) -> float:
    """Angle of a rotation matrix, degrees (geometry.pose.se3.angle_deg)."""
    return angle_deg(R)


@dataclass(frozen=True)
class KeyframePolicy:
    """When the current frame becomes the next keyframe.

    Args:
        every_n: promote after this many frames tracked against one keyframe (0 = never by count).
        max_rotation_deg: promote when the rotation from the keyframe exceeds this (0 = off).
        max_translation: promote when the translation from the keyframe exceeds this, in trajectory
            units (metres when the scale is metric; 0 = off).
    """

    every_n: int = 10
    max_rotation_deg: float = 15.0
    max_translation: float = 0.0

    def __post_init__(self):
        if int(self.every_n) < 0:
            raise ValueError(f'keyframe every_n must be >= 0, got {self.every_n}')
        for name in ('max_rotation_deg', 'max_translation'):
            value = getattr(self, name)
            if not (value >= 0.0 and np.isfinite(value)):
                raise ValueError(f'keyframe {name} must be a finite number >= 0, got {value}')
        if self.every_n == 0 and self.max_rotation_deg == 0 and self.max_translation == 0:
            raise ValueError('keyframe policy never promotes: set every_n, max_rotation_deg or '
                             'max_translation')

    def reason(self, frames_tracked: int, T_key_frame: np.ndarray) -> str | None:
        """Why the frame with pose `T_key_frame` (trajectory units) should be promoted, or None."""
        if self.every_n and frames_tracked >= self.every_n:
            return f'every_n ({frames_tracked} frames)'
        angle = rotation_angle_deg(T_key_frame[:3, :3])
        if self.max_rotation_deg and angle > self.max_rotation_deg:
            return f'rotation {angle:.2f} deg > {self.max_rotation_deg}'
        dist = float(np.linalg.norm(T_key_frame[:3, 3]))
        if self.max_translation and dist > self.max_translation:
            return f'translation {dist:.3g} > {self.max_translation}'
        return None


@dataclass
class Keyframe:
    """The current reference view of the temporal chain."""

    data: Any                         # whatever the caller needs again (e.g. its network image)
    stamp_ns: int
    T_odom_key: np.ndarray            # 4x4, trajectory units
    index: int                        # 0 for the first keyframe
    ref_depth: np.ndarray | None = None   # (H, W) z in trajectory units on the network grid
    ref_metric: bool = False          # reference came from a metric depth image
    frames_tracked: int = 0


@dataclass(frozen=True)
class ChainStep:
    """Outcome of tracking one frame against the keyframe."""

    T_odom_frame: np.ndarray          # 4x4 trajectory pose of the frame
    T_key_frame: np.ndarray           # 4x4 pose in the keyframe, trajectory units
    scale: ScaleResult
    promoted: str | None              # why this frame became the keyframe, or None


@dataclass
class KeyframeChain:
    """Keyframe bookkeeping and pose chaining (pure numpy; the pair node feeds it PnP results).

    Args:
        policy: when to promote frames.
        min_scale_support: fewest confident pixels for a chaining scale.
    """

    policy: KeyframePolicy
    min_scale_support: int = 20
    keyframe: Keyframe | None = None
    keyframes_made: int = 0
    history: list = field(default_factory=list)   # (stamp_ns, T_odom_frame) of published poses

    def start(self, data: Any, stamp_ns: int, ref_depth: np.ndarray | None = None,
              ref_metric: bool = False) -> np.ndarray:
        """Make the first keyframe (odom origin); returns its pose (identity by definition)."""
        T = np.eye(4)
        self.keyframe = Keyframe(data, int(stamp_ns), T, 0, ref_depth, ref_metric)
        self.keyframes_made = 1
        self.history = [(int(stamp_ns), T.copy())]
        return T

    def reset(self) -> None:
        self.keyframe = None
        self.keyframes_made = 0
        self.history = []

    def pair_scale(self, key_depth: np.ndarray, key_mask: np.ndarray) -> ScaleResult:
        """Scale of the current pair from the keyframe's z in that pair (DUSt3R units).

        The first pair of the first keyframe (no reference yet) defines the unit: scale 1 and its
        depth becomes the reference.
        """
        kf = self._need_keyframe()
        if kf.ref_depth is None:
            kf.ref_depth = np.where(key_mask, key_depth, np.nan).astype(np.float32)
            return ScaleResult('none', 1.0, 'first pair defines the unit', int(key_mask.sum()))
        source = 'depth' if kf.ref_metric else 'none'
        return median_ratio_scale(kf.ref_depth, key_depth, key_mask,
                                  min_support=self.min_scale_support, source=source)

    def track(self, T_key_frame_units: np.ndarray, scale: ScaleResult, data: Any, stamp_ns: int,
              frame_depth: np.ndarray | None = None, frame_mask: np.ndarray | None = None,
              frame_metric_depth: np.ndarray | None = None) -> ChainStep:
        """Chain one successfully solved frame; maybe promote it to keyframe.

        Args:
            T_key_frame_units: 4x4 PnP pose of the frame in the keyframe, DUSt3R units of the pair.
            scale: the pair's scale (from `pair_scale` or a metric source); must be ok.
            data: payload stored if the frame is promoted (e.g. its network image).
            stamp_ns: the frame's stamp.
            frame_depth: the frame's z in its own camera, DUSt3R units of the pair (network grid);
                needed to propagate the reference depth when it is promoted.
            frame_mask: confident pixels of `frame_depth`.
            frame_metric_depth: metric depth of the frame on the network grid, if available; used
                as the new keyframe's reference instead of the propagated one.
        """
        if not scale.ok:
            raise ValueError(f'cannot chain a pair without a scale ({scale.reason})')
        kf = self._need_keyframe()
        T = np.array(T_key_frame_units, dtype=np.float64)
        T[:3, 3] *= scale.value
        T_odom = kf.T_odom_key @ T
        kf.frames_tracked += 1
        reason = self.policy.reason(kf.frames_tracked, T)
        if reason is not None:
            if frame_metric_depth is not None:
                ref, metric = np.asarray(frame_metric_depth, np.float32), True
            elif frame_depth is not None:
                mask = np.ones(frame_depth.shape, bool) if frame_mask is None else frame_mask
                ref = np.where(mask, frame_depth * scale.value, np.nan).astype(np.float32)
                metric = kf.ref_metric
            else:
                ref, metric = None, False
            self.keyframe = Keyframe(data, int(stamp_ns), T_odom, self.keyframes_made, ref, metric)
            self.keyframes_made += 1
        self.history.append((int(stamp_ns), T_odom.copy()))
        return ChainStep(T_odom, T, scale, reason)

    def _need_keyframe(self) -> Keyframe:
        if self.keyframe is None:
            raise RuntimeError('no keyframe yet: call start() with the first frame')
        return self.keyframe
