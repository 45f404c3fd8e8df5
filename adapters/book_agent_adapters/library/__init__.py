"""Library backends: the providers of the library's index roles (ports/library.py).

`backends.py` finds them (the entry-point group `book_agent.library_backends`, the built-in
`local` among them) and checks what they build; `local.py` is the built-in one (SQLite +
numpy impact index, faiss), whose files live under data_dir/library/.
"""
