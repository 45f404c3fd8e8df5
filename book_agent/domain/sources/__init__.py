"""Reading the original book as data and rules: locators and their summaries, EPUB CFIs, printed
page labels, text matching and alignment, contents and source-window shapes.
"""
