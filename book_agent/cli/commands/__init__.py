"""One module per command group of `book-agent` (typer); what they share lives one level up
(common.py, output.py, argv.py).
"""
