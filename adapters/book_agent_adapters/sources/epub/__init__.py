"""An EPUB original through zipfile + selectolax: spine, chapter text with offsets, and CFIs.
"""
