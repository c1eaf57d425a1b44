"""Pinhole camera model from CameraInfo and rectification of distorted lenses."""
