"""The XMTP v3 wire: the project's own ``.proto`` files for the API real XMTP clients speak, and their Python.

Package, message and service names, field numbers and types follow the public
XMTP protocol definitions (xmtp/proto at the revision libxmtp v1.10.0 pins), since
they are the interface: a gRPC method's path is ``/<package>.<Service>/<Method>``
and a message is only its field numbers on the wire.  The sources hold only what
a node needs, without the HTTP gateway annotations.

``proto/*.proto`` are the sources; ``proto/*_pb2.py``, ``*_pb2.pyi`` and
``*_pb2_grpc.py`` are generated from them by ``python -m
protocols.libraries.xmtp_wire.generate`` and checked in (a test regenerates
them and fails when they drift).  Import the generated modules from
:mod:`protocols.libraries.xmtp_wire.proto`.
"""
