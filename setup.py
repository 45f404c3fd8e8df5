"""Package discovery: every folder under book_agent/ ships (data folders such as
book_agent/resources/skill too), so a new adapter sub-folder needs no edit here.
All other metadata lives in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(packages=[p for p in find_namespace_packages(include=["book_agent", "book_agent.*"]) if "__pycache__" not in p])
