"""See `dialects.hlo`."""
