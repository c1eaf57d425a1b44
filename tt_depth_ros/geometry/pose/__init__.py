"""Poses: SE(3) helpers, PnP from pointmaps and ray maps, keyframe chaining."""
