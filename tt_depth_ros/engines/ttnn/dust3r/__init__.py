"""DUSt3R on device: CroCo decoder block, DPT heads, the two-view model (torch models/dust3r/)."""
