"""DA3 on device: DINOv2 backbone, DPT head, the metric network (torch models/da3/)."""
