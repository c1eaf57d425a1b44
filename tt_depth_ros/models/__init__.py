"""The networks as torch nn.Modules, written from the specs (docs/da3.md, docs/dust3r.md).

layers/ the shared ViT / DPT blocks; da3/ the Depth Anything 3 family; dust3r/ DUSt3R;
weight_rule.py the golden rule-v1 synthetic weights. Module and attribute names are the
checkpoint keys. The bottom layer with geometry/: may import torch, numpy and safetensors,
nothing else of the package; never ROS.
"""
