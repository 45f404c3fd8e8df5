"""Integration tests of AI hosts' configuration files and plug-ins."""
