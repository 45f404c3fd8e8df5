"""Text as the lexical channels read it: FTS5's own terms, Chinese word boundaries and the
traditional/simplified fold, and passages read into terms.
"""
