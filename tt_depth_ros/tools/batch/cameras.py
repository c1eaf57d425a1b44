"""Which image and CameraInfo topics of a bag are cameras, and where each one's outputs go.

`--camera image=/front/image_raw,camera_info=/front/camera_info` (repeatable; `ns=/front` sets
the output namespace, default the image topic's parent, as the node's namespace) or, without it,
every image topic named like a camera driver's (`image_raw`, `image`, `image_rect`,
`image_rect_color`, `image_color`) that has a `camera_info` beside it. The node's
`input_transport: compressed` takes `<image>/compressed` for the default pairs.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass

IMAGE_NAMES = ('image_raw', 'image', 'image_rect', 'image_rect_color', 'image_color')
IMAGE_TYPES = ('sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage')
INFO_TYPE = 'sensor_msgs/msg/CameraInfo'


class CameraTopicError(ValueError):
    """A camera whose topics are not in the bag or have the wrong type (message says which)."""


@dataclass(frozen=True)
class Camera:
    """One camera of a bag: its input topics and its output namespace."""

    image: str
    camera_info: str
    ns: str

    def output(self, relative: str) -> str:
        """Absolute output topic of a node topic name ('depth' -> '/front/depth')."""
        return posixpath.join(self.ns, relative)


def parse_camera(spec: str) -> Camera:
    """'image=T,camera_info=T[,ns=NS]' -> Camera (ValueError naming the bad part)."""
    fields = {}
    for part in spec.split(','):
        key, sep, value = part.partition('=')
        if not sep or key not in ('image', 'camera_info', 'ns') or not value.startswith('/'):
            raise ValueError(f"--camera {spec!r}: expected image=/TOPIC,camera_info=/TOPIC"
                             f"[,ns=/NAMESPACE] with absolute names, got {part!r}")
        fields[key] = value
    if 'image' not in fields or 'camera_info' not in fields:
        raise ValueError(f'--camera {spec!r}: needs both image= and camera_info=')
    ns = fields.get('ns') or posixpath.dirname(fields['image']) or '/'
    return Camera(fields['image'], fields['camera_info'], ns)


def default_cameras(types: dict[str, str], compressed: bool) -> list[Camera]:
    """The camera-driver-named image topics with a camera_info beside them, sorted."""
    out = []
    for topic in sorted(types):
        ns, name = posixpath.split(topic)
        info = posixpath.join(ns, 'camera_info')
        if name in IMAGE_NAMES and types.get(info) == INFO_TYPE:
            image = topic + '/compressed' if compressed else topic
            out.append(Camera(image, info, ns or '/'))
    return out


def check_cameras(cameras: list[Camera], types: dict[str, str]) -> None:
    """CameraTopicError unless every camera's topics are in the bag with the right types."""
    if not cameras:
        raise CameraTopicError('no camera found (an image_raw/image topic with a camera_info '
                               f'beside it); the bag has {sorted(types)}; pass --camera '
                               'image=/TOPIC,camera_info=/TOPIC')
    for cam in cameras:
        for topic, allowed in ((cam.image, IMAGE_TYPES), (cam.camera_info, (INFO_TYPE,))):
            if topic not in types:
                raise CameraTopicError(f'topic {topic} is not in the bag; it has '
                                       f'{sorted(types)}; pass --camera with the right names')
            if types[topic] not in allowed:
                raise CameraTopicError(f'topic {topic} is {types[topic]}, expected one of '
                                       f'{list(allowed)}')
