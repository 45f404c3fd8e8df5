"""Package discovery with the one mapping of this project.

`adapters/` is a top-level folder imported as `book_agent.adapters`: a top-level import
package named `adapters` would collide with an unrelated, popular PyPI package. setuptools'
`package-dir` does the mapping; this file only lists the packages under both roots so a
new adapter sub-folder needs no edit. All other metadata lives in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

# namespace discovery for the core: data folders such as book_agent/resources/skill ship too
core = [p for p in find_namespace_packages(include=["book_agent", "book_agent.*"]) if "__pycache__" not in p]
adapters = ["book_agent.adapters"] + [
    "book_agent.adapters." + p for p in find_packages(where="adapters")
]

setup(
    packages=core + adapters,
    package_dir={"book_agent": "book_agent", "book_agent.adapters": "adapters"},
)
