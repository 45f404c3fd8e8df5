"""Low-level file access the adapters share (read-only SQLite opening, file hashes): no role of
its own, and below every capability, so that package checks and storage need not import each
other for it."""
