"""What runs in user space: one subpackage per upstream project (packetdrill, …)."""
