"""rosbag2 access for the replay, record and benchmark tools: raw CDR in, raw CDR out.

Messages stay serialized end to end (docs/ros.md §6): the bag's CDR bytes go straight into rclpy
publishers, and raw subscriptions hand bytes straight to the `rosbags` Writer. The one edit made to
raw bytes is the header stamp, which sits at a fixed place in every message whose first field is
a std_msgs/Header (after the 4-byte CDR encapsulation: int32 sec, uint32 nanosec). Rewriting it
keeps looped replays' stamps unique without a decode/re-encode.
"""
from __future__ import annotations

import hashlib
import importlib
import struct
from dataclasses import dataclass
from pathlib import Path

_CDR_LE = (b'\x00\x01', b'\x00\x03')  # plain CDR / PL_CDR little endian encapsulation ids


@dataclass(frozen=True)
class BagMessage:
    """One serialized message as stored in the bag (timestamp = bag receive time)."""

    topic: str
    msgtype: str
    timestamp_ns: int
    raw: bytes


def read_bag(path: str | Path, topics: list[str] | None = None,
             limit: int | None = None) -> tuple[list[BagMessage], dict[str, str]]:
    """Load messages (in bag time order) and {topic: msgtype} of a rosbag2 (MCAP or sqlite3).

    Args:
        path: rosbag2 directory (with metadata.yaml).
        topics: only these topics (None: all); unknown names raise ValueError listing the bag's.
        limit: stop after this many messages (None: all).
    """
    from rosbags.rosbag2 import Reader

    path = Path(path)
    if not (path / 'metadata.yaml').is_file():
        raise ValueError(f'{path} is not a rosbag2 directory (no metadata.yaml); '
                         'generate one with `python -m tt_depth_ros.tools.bag.sample OUT`')
    with Reader(path) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        if topics is not None:
            missing = sorted(set(topics) - set(types))
            if missing:
                raise ValueError(f'topics {missing} not in bag {path}; it has {sorted(types)}')
            conns = [c for c in reader.connections if c.topic in topics]
            types = {t: types[t] for t in topics}
        else:
            conns = reader.connections
        out = []
        for conn, stamp, raw in reader.messages(connections=conns):
            out.append(BagMessage(conn.topic, conn.msgtype, int(stamp), bytes(raw)))
            if limit is not None and len(out) >= limit:
                break
    return out, types


def bag_sha256(path: str | Path) -> str:
    """sha256 over the bag's storage files (sorted by name), excluding metadata.yaml."""
    h = hashlib.sha256()
    for f in sorted(p for p in Path(path).iterdir() if p.is_file() and p.name != 'metadata.yaml'):
        h.update(f.name.encode())
        with f.open('rb') as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b''):
                h.update(chunk)
    return h.hexdigest()


def message_class(msgtype: str):
    """The rclpy message class of 'pkg/msg/Name' (ImportError says which package is missing)."""
    parts = msgtype.split('/')
    if len(parts) != 3 or parts[1] != 'msg':
        raise ValueError(f"message type must look like 'pkg/msg/Name', got {msgtype!r}")
    try:
        module = importlib.import_module(f'{parts[0]}.msg')
    except ImportError as exc:
        raise ImportError(f'message package {parts[0]!r} for {msgtype} is not installed in this '
                          'environment; install its ROS wheel or leave the topic out') from exc
    return getattr(module, parts[2])


def has_header(msgtype: str) -> bool:
    """True when the message's first field is a std_msgs/Header (stamp readable/rewritable)."""
    fields = message_class(msgtype).get_fields_and_field_types()
    first = next(iter(fields.items()), (None, None))
    return first[1] == 'std_msgs/Header'


def header_stamp_ns(raw: bytes) -> int:
    """Header stamp (ns) of a serialized header-first message, read without deserializing."""
    if raw[:2] not in _CDR_LE:
        raise ValueError(f'unsupported CDR encapsulation {raw[:2].hex()} (need little endian)')
    sec, nsec = struct.unpack_from('<iI', raw, 4)
    return sec * 1_000_000_000 + nsec


def restamp(raw: bytes, stamp_ns: int) -> bytes:
    """Copy of a serialized header-first message with its header stamp set to `stamp_ns`."""
    if raw[:2] not in _CDR_LE:
        raise ValueError(f'unsupported CDR encapsulation {raw[:2].hex()} (need little endian)')
    buf = bytearray(raw)
    struct.pack_into('<iI', buf, 4, stamp_ns // 1_000_000_000, stamp_ns % 1_000_000_000)
    return bytes(buf)


def zero_padded_cdr(raw: bytes, msgtype: str, typestore) -> bytes:
    """The same message as `raw` with its CDR alignment padding zeroed.

    rclpy's `serialize_message` leaves the padding bytes after strings and small fields
    uninitialised (whatever the heap held), so the same message serializes differently run to run;
    the DDS transport sends zeros there. Re-encoding with the `rosbags` typestore writes zeros:
    bags written offline then hold the bytes a subscriber of the live topic receives.
    """
    return bytes(typestore.serialize_cdr(typestore.deserialize_cdr(raw, msgtype), msgtype))


def default_typestore_distro() -> str:
    """'kilted' under rclpy >= 9, else 'jazzy' (the typestore whose RIHS01 hashes match)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        major = int(version('ros-rclpy').split('.')[0])
    except (PackageNotFoundError, ValueError):
        return 'jazzy'
    return 'kilted' if major >= 9 else 'jazzy'
