"""See `hlo`."""
