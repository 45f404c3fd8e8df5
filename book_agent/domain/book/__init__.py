"""A registered book as data: its package, registry entry, runtime config and states, what its
queries need (query_runtime_spec), and the book references and reports the commands return.
"""
