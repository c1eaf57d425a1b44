"""DUSt3R pointmaps: metric scale, the fused pair cloud, focal length from a pointmap."""
