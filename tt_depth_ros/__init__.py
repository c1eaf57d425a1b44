"""tt_depth_ros: metric monocular depth and two-view reconstruction for ROS 2.

Layers, bottom up (docs/design.md §2; each folder's `__init__.py` says what it holds and may
import): models/ and geometry/, engines/, pipelines/, api/, ros/, tools/. Imports flow one way.
"""

__version__ = '0.1.0'
