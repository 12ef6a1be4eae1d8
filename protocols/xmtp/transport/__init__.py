"""How the client reaches its delivery service: one interface, an in-process loopback and ``tessera serve``."""
