"""Conformance of the RFC 9420 packages against the official mlswg interop vectors.

:func:`run_file` loads a vector file, :func:`detect` tells its type from the
keys of its entries (:mod:`.registry` lists the types, one checker module
each under :mod:`.checkers`), and every entry is checked by calling the
production code.  The ``tessera mls conformance`` command is in :mod:`protocols.libraries.mls.cli`.
"""

from protocols.libraries.mls.conformance.detect import detect
from protocols.libraries.mls.conformance.errors import UnknownVectorFile
from protocols.libraries.mls.conformance.registry import VECTOR_TYPES, VectorType
from protocols.libraries.mls.conformance.report import Failure, Report, SuiteCounts
from protocols.libraries.mls.conformance.runner import run_file

__all__ = ["VECTOR_TYPES", "Failure", "Report", "SuiteCounts", "UnknownVectorFile", "VectorType", "detect", "run_file"]
