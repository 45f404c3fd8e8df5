"""`book-agent serve`: the streamable-HTTP server and its hardening (connection shares, request
limits and slots, Host/Origin checks, the access log, uvicorn's workers).
"""
