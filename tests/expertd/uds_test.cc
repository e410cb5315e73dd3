// Placeholder; filled below.
