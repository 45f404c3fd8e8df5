"""The stdio transport: the SDK's, with one JSON-RPC message per line checked both ways.
"""
