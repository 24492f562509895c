"""Token counts that never touch the network (`count`), and their disk cache across processes (`disk_cache`, a leaf)."""
