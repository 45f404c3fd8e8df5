"""Library use cases: several books (`a,b` or `@all`) searched as one, through the library's own
lexical and vector indexes (ports.library), and the writer that keeps those indexes fresh.
"""
