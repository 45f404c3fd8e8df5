"""Plug-ins: the one loader for every role that several implementations fill (rerankers, library
backends, AI hosts). Built-ins register in the same entry-point groups as third parties
(pyproject.toml) and are also listed in code, so a source tree without metadata still finds them
and a plug-in can never take a built-in's name.
"""
