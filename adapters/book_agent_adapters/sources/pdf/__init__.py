"""A PDF original through PDFium (pypdfium2): page text and boxes, rendering, highlights.
"""
