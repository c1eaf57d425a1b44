"""The ttnn simulator: what runs the ttnn engines without a Tenstorrent card.

- standin/: a CPU stand-in of the subset of ttnn 0.81.1 the engines use (installed as `ttnn`).

Imports nothing itself, so that a subpackage imports without the others' dependencies.
"""
