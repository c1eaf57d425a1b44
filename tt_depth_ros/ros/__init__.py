"""ros layer."""
