"""Generated protobuf and gRPC modules of the XMTP wire (see the package docstring); do not edit by hand."""
