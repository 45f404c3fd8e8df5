"""book-agent's tests: unit/, integration/, e2e/ and the shared helpers in support/."""
