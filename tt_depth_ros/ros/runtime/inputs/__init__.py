"""Inputs: image subscriptions and admission, CameraInfo by stamp, rectification, side inputs."""
