"""One checker per vector type: ``check(entry) -> list[Failure]``, empty when the entry passes."""
