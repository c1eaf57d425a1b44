"""The depth node's `cameras` parameter: namespaces, topic pairs, the single camera, errors."""
import pytest

from tt_depth_ros.ros.depth.cameras_param import (
    SINGLE_CAMERA,
    CameraSpec,
    parse_cameras,
    shapes_needed,
)


def test_empty_is_the_single_camera_with_todays_topics():
    assert parse_cameras([]) == [SINGLE_CAMERA]
    cam = SINGLE_CAMERA
    assert (cam.image, cam.camera_info, cam.output('depth'), cam.single) == \
        ('image', 'camera_info', 'depth', True)


def test_namespaces_and_field_entries():
    cams = parse_cameras(['/front', 'rear/', 'image=/left/image_raw,camera_info=/left/info,'
                          'size=640x480,priority=2,max_rate_hz=5,transport=compressed'])
    assert cams[0] == CameraSpec('/front', '/front/image', '/front/camera_info', '/front')
    assert cams[1].output('points') == 'rear/points' and cams[1].image == 'rear/image'
    left = cams[2]
    assert (left.key, left.output('depth/camera_info'), left.size, left.priority,
            left.max_rate_hz, left.transport) == ('/left', '/left/depth/camera_info', (640, 480),
                                                  2, 5.0, 'compressed')
    assert not any(c.single for c in cams)


@pytest.mark.parametrize('entries, match', [
    (['/a', '/a'], 'used by two cameras'),
    (['image=/x/i,camera_info=/x/c', 'image=/x/j,camera_info=/y/c'], 'given twice'),
    (['image=/a/i'], 'needs both'),
    (['image=/a/i,camera_info=/a/c,size=640'], 'WIDTHxHEIGHT'),
    (['image=/a/i,camera_info=/a/c,priority=0'], 'priority'),
    (['image=/a/i,camera_info=/a/c,fps=3'], 'is not one of'),
    (['image=/a/i,camera_info=/a/c,transport=jpeg'], 'transport'),
    (['image=/i,camera_info=/c'], 'no parent namespace'),
    (['/'], 'a namespace'),
    ([''], 'empty entry'),
])
def test_bad_entries_name_what_is_wrong(entries, match):
    with pytest.raises(ValueError, match=match):
        parse_cameras(entries)


def test_shapes_needed_counts_distinct_and_unknown_sizes():
    cams = parse_cameras(['image=/a/i,camera_info=/a/c,size=64x48',
                          'image=/b/i,camera_info=/b/c,size=64x48',
                          'image=/c/i,camera_info=/c/c,size=32x24', '/d'])
    assert shapes_needed(cams, None) == 3
    assert shapes_needed(cams, (64, 48)) == 2
    assert shapes_needed(cams[:1], None) == 2          # never fewer than the default
