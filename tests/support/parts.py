"""Real parts (weights, host CLIs) that a test needs: skipped locally, a failure in CI."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def require_real_part(available: bool, what: str) -> None:
    """Skip locally when a real part is missing; in CI (CI=true) fail instead."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is missing in CI: `make test` must install it")
    pytest.skip(f"{what} is not installed (run `make install`)")
