"""The tool table: each MCP tool declared once (table.py), its parameters, descriptions and output
schemas, how a declaration becomes a FastMCP tool, and the resources.
"""
