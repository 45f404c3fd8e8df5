"""The registry of books: which books are registered and where their packages are.
"""
