"""Tool arguments checked once, strictly against the published schemas, before any tool runs.
"""
