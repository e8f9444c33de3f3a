"""icae-tui: evaluate coding agents as interactive project builders."""

import logging

# Library code logs; only an entry point decides where logs go (never onto the console UI).
logging.getLogger(__name__).addHandler(logging.NullHandler())
