"""Package builders: the bundled example (build_example_package.py) and real PDFs and EPUBs (build_package.py).
"""
