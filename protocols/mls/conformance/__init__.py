"""Conformance of the RFC 9420 packages against the official mlswg interop vectors.

:func:`run_file` loads a vector file, :func:`detect` tells its type from the
keys of its entries (:mod:`.registry` lists the types, one checker module
each under :mod:`.checkers`), and every entry is checked by calling the
production code.  The ``tessera mls conformance`` command is in :mod:`protocols.mls.cli`.
"""

from protocols.mls.conformance.detect import detect
from protocols.mls.conformance.errors import UnknownVectorFile
from protocols.mls.conformance.registry import VECTOR_TYPES, VectorType
from protocols.mls.conformance.report import Failure, Report, SuiteCounts
from protocols.mls.conformance.runner import run_file

__all__ = ["VECTOR_TYPES", "Failure", "Report", "SuiteCounts", "UnknownVectorFile", "VectorType", "detect", "run_file"]
