"""Host config files and their writes: JSON and JSONC round trips, planned operations, and writes
that never leave a half-written or lost host file.
"""
