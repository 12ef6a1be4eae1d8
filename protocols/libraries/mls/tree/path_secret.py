"""Path secrets and the node key pairs they give (RFC 9420 §7.4).

Along an UpdatePath each node's path secret is derived from the one below
it, ``path_secret[n] = DeriveSecret(path_secret[n-1], "path")``, and one more
step past the root gives the commit secret (§12.4.1).  A node's key pair is
``DeriveKeyPair(DeriveSecret(path_secret, "node"))``, so the path secret is
only ever fed to DeriveSecret and the node secret only to DeriveKeyPair.

Path secrets are plain ``bytes``; whoever keeps one keeps it out of reprs.
"""

from __future__ import annotations

from ..crypto import CipherSuite, KeyPair
from ..crypto.labels import derive_secret


def next_path_secret(cs: CipherSuite, path_secret: bytes) -> bytes:
    """The path secret of the next node up (or, past the root, the commit secret)."""
    return derive_secret(cs, path_secret, "path")


def node_key_pair(cs: CipherSuite, path_secret: bytes) -> KeyPair:
    """The HPKE key pair of the node whose path secret this is."""
    return cs.derive_hpke_key_pair(derive_secret(cs, path_secret, "node"))


def path_secret_chain(cs: CipherSuite, first: bytes, length: int) -> list[bytes]:
    """``length`` path secrets: ``first`` and each one derived from the one before."""
    chain = [first]
    while len(chain) < length:
        chain.append(next_path_secret(cs, chain[-1]))
    return chain[:length]
