"""One book's parts in its runtime dir (data_dir/books/<id>/): the lexical sidecar and its impact
file (lexical/), the package's vectors and their cached matrix (vectors/), verified locators,
and the runtime dir's own housekeeping. Never the package, which is read-only.
"""
