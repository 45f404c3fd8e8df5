"""What this installation has: `book-agent doctor`."""
