"""The pair node (DUSt3R or DA3 any-view): node, modes, steps, pairing, outputs, odometry.

May import: ros.runtime, ros.msgs, pipelines, geometry, engines.factory (when the engine is
built). Never torch, never ros.depth or tools.
"""
