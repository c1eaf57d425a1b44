"""Network input geometry of DA3 and DUSt3R: sizes, resizes, the intrinsics they imply, checks."""
