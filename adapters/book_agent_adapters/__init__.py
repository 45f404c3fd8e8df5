"""Concrete adapters, one role per module (imported as `book_agent_adapters`)."""
