"""netstack: the Linux network stack, emulated layer by layer on Trio."""
