"""DUSt3R (naver/DUSt3R_ViTLarge_BaseDecoder_512_dpt) two-view pointmap network (docs/dust3r.md)."""
