"""Child processes of book-agent's own background work (a book's locator rebuild, a server's
library writer): one way to start them, at a lower priority, in a session of their own."""
