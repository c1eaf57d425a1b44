"""Device layers the DA3 and DUSt3R ttnn models share: ViT block, attention, RoPE, convs, DPT."""
