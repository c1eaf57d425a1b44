"""DUSt3R (naver/DUSt3R_ViTLarge_BaseDecoder_512_dpt), the two-view pointmap network.

CroCo encoder and decoder blocks, the two DPT heads, configs, checkpoint mapping and the FLOP
count (docs/dust3r.md). May import: models.layers, torch, numpy.
"""
