"""Depth after the network: metres, resampling, clouds, previews, compressed depth, ground scale."""
