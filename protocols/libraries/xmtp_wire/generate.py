"""Regenerate the checked-in Python of the XMTP wire from ``proto/*.proto`` with grpcio-tools.

``python -m protocols.libraries.xmtp_wire.generate`` rewrites the modules in
place; :func:`generate_into` writes them into another directory, which is how the
drift test compares the checked-in code with what the sources produce.

The sources import each other by their path from the repository root, so the
generated modules import each other as ``protocols.libraries.xmtp_wire.proto.*``
without any rewriting afterwards.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent / "proto"
REPO_ROOT = PROTO_DIR.parents[3]
# Every generated file sits beside its source under this path, in the output tree too.
PACKAGE_PATH = PROTO_DIR.relative_to(REPO_ROOT)
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


class GenerationFailed(RuntimeError):
    """protoc refused the sources; the message carries its diagnostics."""


def proto_sources() -> list[Path]:
    """The ``.proto`` files, in a stable order."""
    return sorted(PROTO_DIR.glob("*.proto"))


def generated_files(directory: Path) -> list[Path]:
    """The generated modules in ``directory``, in a stable order."""
    return sorted(path for path in directory.iterdir() if path.name.endswith(GENERATED_SUFFIXES))


def _declares_a_service(source: Path) -> bool:
    return any(line.startswith("service ") for line in source.read_text().splitlines())


def generate_into(target: Path) -> list[Path]:
    """Run protoc over the sources and place the generated modules in ``target``; their paths."""
    from grpc_tools import protoc  # the test extra installs grpcio-tools; the node itself never needs it

    well_known = resources.files("grpc_tools") / "_proto"  # google/protobuf/empty.proto lives here
    with tempfile.TemporaryDirectory(prefix="xmtp-wire-") as scratch:
        arguments = [
            "grpc_tools.protoc",
            f"--proto_path={REPO_ROOT}",
            f"--proto_path={well_known}",
            f"--python_out={scratch}",
            f"--pyi_out={scratch}",
            f"--grpc_python_out={scratch}",
            *(str(source.relative_to(REPO_ROOT)) for source in proto_sources()),
        ]
        status = protoc.main(arguments)
        if status != 0:
            raise GenerationFailed(f"protoc exited {status} on {PROTO_DIR}; its messages are above")
        produced = Path(scratch) / PACKAGE_PATH
        with_services = {source.stem for source in proto_sources() if _declares_a_service(source)}
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for path in generated_files(produced):
            if path.name.endswith("_pb2_grpc.py") and path.name.removesuffix("_pb2_grpc.py") not in with_services:
                continue  # protoc writes an empty gRPC module for a file without services; leave it out
            shutil.copyfile(path, target / path.name)
            written.append(target / path.name)
    return written


def main() -> int:
    written = generate_into(PROTO_DIR)
    for path in written:
        print(path.relative_to(REPO_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
