"""Projectors: the contract, the local replay engine and the test kit."""

from projectors.contract import Projector

__all__ = ["Projector"]
