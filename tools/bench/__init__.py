"""`make bench`'s scripts: one bench_*.py per figure (bench.py runs them all); library/ for the
library's indexes at 100k-1M records, peers/ against other stacks, search/ for one search's parts.
"""
