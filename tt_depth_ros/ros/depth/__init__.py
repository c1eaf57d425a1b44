"""The depth node (DA3, one camera): its parameters, its node and the relative-depth outputs.

May import: ros.runtime, ros.msgs, pipelines, geometry. Never torch, never ros.pair or tools.
"""
