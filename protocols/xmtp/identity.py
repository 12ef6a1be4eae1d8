"""Who is who in the XMTP-style client: accounts, installations, and the bindings between them.

An *account* is a secp256k1 key, known to people by its Ethereum-style
address (Keccak-256 of the public key, shown with the EIP-55 checksum).  An
*installation* is one device's Ed25519 key, known by its public key in
lowercase hex; that id is the device's MLS credential identity and what the
server authenticates.  An account vouches for each of its installations by
signing a short human-readable text with EIP-191 ``personal_sign``, the same
signature any Ethereum wallet makes: an :class:`InstallationBinding`.

Clients fetch bindings from a server they do not trust, so
:meth:`InstallationBinding.from_bytes` accepts only the one canonical
encoding of a well-formed binding, and :func:`verify` recovers the signer
from the signature itself instead of believing the address written beside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import attrs
import coincurve
import nacl.signing

from protocols.libraries.xmtp_identity.ethereum import (
    SECP256K1_ORDER,
    SIGNATURE_SIZE,
    keccak256,
    personal_message_digest,
)
from protocols.xmtp.errors import InvalidAddress, InvalidBinding, InvalidKey

#: Bytes in a secret key, for both kinds of key.
SECRET_KEY_SIZE = 32

#: The largest serialized binding :meth:`InstallationBinding.from_bytes` reads (a real one is about 320).
MAX_BINDING_BYTES = 1024

#: The first line of every binding text; the version lets a later format never be mistaken for this one.
BINDING_TITLE = "Tessera XMTP installation binding v1"

_FIRST_RECOVERY_BYTE = 27
_MAX_CREATED_AT = 2**63 - 1
_ADDRESS_HINT = "an address is 0x followed by 40 hex digits, e.g. 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
_HEX_DIGITS = re.compile(r"[0-9a-fA-F]*")
_INSTALLATION_ID = re.compile(r"[0-9a-f]{64}")
_SIGNATURE_HEX = re.compile(r"[0-9a-f]{130}")
_BINDING_KEYS = frozenset({"address", "installation_id", "created_at", "signature"})


# --- hashing and addresses ------------------------------------------------------


def checksum_address(raw_address: bytes) -> str:
    """Return the EIP-55 form of a 20-byte address: ``0x`` and hex whose letters' case is the checksum."""
    if len(raw_address) != 20:
        raise InvalidAddress(f"an address has 20 bytes, not {len(raw_address)}")
    lower = raw_address.hex()
    # Each letter is uppercased where the matching nibble of the hash of the lowercase text is 8 or more.
    nibbles = keccak256(lower.encode("ascii")).hex()
    return "0x" + "".join(c.upper() if int(n, 16) >= 8 else c for c, n in zip(lower, nibbles, strict=False))


def parse_address(text: str) -> str:
    """Return ``text`` as a checksummed address, or raise InvalidAddress saying what is wrong with it.

    ``0x`` and 40 hex digits are accepted in three forms: all lowercase or all
    uppercase (which carry no checksum), or mixed case that matches EIP-55.
    """
    problem = _address_shape_problem(text)
    if problem is not None:
        raise InvalidAddress(f"{_preview(text)} is not an account address: {problem}; {_ADDRESS_HINT}")
    digits = text[2:]
    checksummed = checksum_address(bytes.fromhex(digits))
    if text != checksummed and digits not in (digits.lower(), digits.upper()):
        raise InvalidAddress(
            f"{text} has mixed case that does not match its EIP-55 checksum, so a character is probably "
            "mistyped; copy the address again (all-lowercase is accepted too, but then nothing is checked)"
        )
    return checksummed


def _address_shape_problem(text: object) -> str | None:
    if not isinstance(text, str):
        return f"it is a {type(text).__name__}, not text"
    if not text.startswith("0x"):
        return "it does not start with 0x"
    if len(text) != 42:
        return f"it has {len(text) - 2} characters after 0x, not 40"
    if not _HEX_DIGITS.fullmatch(text, 2):
        return "it has characters that are not hex digits"
    return None


def _preview(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _address_of(public_key: coincurve.PublicKey) -> str:
    # The uncompressed encoding is 0x04 ‖ x ‖ y; the address hashes only x ‖ y.
    return checksum_address(keccak256(public_key.format(compressed=False)[1:])[-20:])


# --- EIP-191 personal_sign ----------------------------------------------------------


def recover_signer(message: bytes, signature: bytes) -> str:
    """Return the checksummed address of the key that made ``signature`` (r ‖ s ‖ v) over ``message``.

    Raises InvalidBinding for a signature that is malformed (not 65 bytes, v
    not 27 or 28, r or s out of range, s in the upper half of the group order,
    which is only ever a malleated copy) or from which no key can be recovered.
    A well-formed signature of another message recovers some other address:
    compare the result with the address you expect.
    """
    compact = _recoverable_compact(signature)
    digest = personal_message_digest(message)
    try:
        public_key = coincurve.PublicKey.from_signature_and_message(compact, digest, hasher=None)
    except Exception as error:  # coincurve's C binding does not promise which exception types it raises
        raise InvalidBinding("no public key can be recovered from this signature over this message") from error
    return _address_of(public_key)


def _recoverable_compact(signature: object) -> bytes:
    """Check a r ‖ s ‖ v signature and return coincurve's r ‖ s ‖ recovery-id form of it."""
    if not isinstance(signature, (bytes, bytearray)):
        raise InvalidBinding(f"a signature is {SIGNATURE_SIZE} bytes, not a {type(signature).__name__}")
    if len(signature) != SIGNATURE_SIZE:
        raise InvalidBinding(f"a signature is {SIGNATURE_SIZE} bytes (r ‖ s ‖ v), not {len(signature)}")
    v = signature[64]
    if v not in (_FIRST_RECOVERY_BYTE, _FIRST_RECOVERY_BYTE + 1):
        raise InvalidBinding(f"a signature's last byte v must be 27 or 28, not {v}")
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:64], "big")
    if not 0 < r < SECP256K1_ORDER:
        raise InvalidBinding("a signature's r must lie between 1 and the secp256k1 group order")
    if not 0 < s <= SECP256K1_ORDER // 2:
        # Both s and n - s verify; accepting only the low one keeps each signature's bytes unique (EIP-2).
        raise InvalidBinding("a signature's s must lie between 1 and half the secp256k1 group order")
    return bytes(signature[:64]) + bytes([v - _FIRST_RECOVERY_BYTE])


# --- keys -------------------------------------------------------------------------


def _secret_bytes(secret: object, what: str) -> bytes:
    if not isinstance(secret, (bytes, bytearray)) or len(secret) != SECRET_KEY_SIZE:
        size = len(secret) if isinstance(secret, (bytes, bytearray)) else type(secret).__name__
        raise InvalidKey(f"{what} is {SECRET_KEY_SIZE} raw bytes (not hex), got {size}")
    return bytes(secret)


@attrs.frozen(eq=False)
class AccountKey:
    """An account's secp256k1 key: it is the account, and signs its installation bindings.

    Attributes:
        private_key: The coincurve key (never shown by ``repr``).
        address: Its checksummed Ethereum-style address, derived once.
    """

    private_key: coincurve.PrivateKey = attrs.field(repr=False)
    address: str = attrs.field(init=False)

    @address.default
    def _derive_address(self) -> str:
        return _address_of(self.private_key.public_key)

    @classmethod
    def generate(cls) -> AccountKey:
        """Return a new account key drawn from the operating system's randomness."""
        return cls(coincurve.PrivateKey())

    @classmethod
    def from_bytes(cls, secret: bytes) -> AccountKey:
        """Load a key saved with :meth:`to_bytes`; raise InvalidKey unless it is 32 bytes, non-zero and below the order."""
        raw = _secret_bytes(secret, "an account key")
        if not 0 < int.from_bytes(raw, "big") < SECP256K1_ORDER:
            raise InvalidKey("an account key must be non-zero and below the secp256k1 group order")
        return cls(coincurve.PrivateKey(raw))

    def to_bytes(self) -> bytes:
        """Return the 32-byte secret, for :meth:`from_bytes`; keep it secret."""
        return bytes(self.private_key.secret)

    def personal_sign(self, message: bytes) -> bytes:
        """Sign ``message`` as EIP-191 ``personal_sign`` does; return r ‖ s ‖ v (65 bytes, v = 27 or 28).

        The nonce is derived from key and message (RFC 6979), so the same
        message signed twice gives the same bytes, as in other Ethereum tools.
        """
        rs_recovery = self.private_key.sign_recoverable(personal_message_digest(message), hasher=None)
        return rs_recovery[:64] + bytes([_FIRST_RECOVERY_BYTE + rs_recovery[64]])


@attrs.frozen(eq=False)
class InstallationKey:
    """One device's Ed25519 key.

    Attributes:
        signing_key: The PyNaCl key (never shown by ``repr``).
        installation_id: The 32-byte public key in lowercase hex: the MLS credential
            identity of this device and what the server authenticates.
    """

    signing_key: nacl.signing.SigningKey = attrs.field(repr=False)
    installation_id: str = attrs.field(init=False)

    @installation_id.default
    def _derive_id(self) -> str:
        return self.public_key.hex()

    @classmethod
    def generate(cls) -> InstallationKey:
        """Return a new installation key drawn from the operating system's randomness."""
        return cls(nacl.signing.SigningKey.generate())

    @classmethod
    def from_bytes(cls, seed: bytes) -> InstallationKey:
        """Load a key saved with :meth:`to_bytes` (its 32-byte seed); raise InvalidKey for any other length."""
        return cls(nacl.signing.SigningKey(_secret_bytes(seed, "an installation key")))

    def to_bytes(self) -> bytes:
        """Return the 32-byte seed, for :meth:`from_bytes`; keep it secret."""
        return bytes(self.signing_key)

    @property
    def public_key(self) -> bytes:
        """The 32-byte Ed25519 public key."""
        return bytes(self.signing_key.verify_key)


# --- bindings ------------------------------------------------------------------------


def _binding_error(message: str) -> InvalidBinding:
    return InvalidBinding(f"installation binding refused: {message}")


def _check_address(_binding: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, str):
        raise _binding_error(f"the address must be text, not a {type(value).__name__}")
    try:
        canonical = parse_address(value)
    except InvalidAddress as error:
        raise _binding_error(str(error)) from error
    if value != canonical:
        raise _binding_error(f"address {value} must be written in its checksummed form {canonical}")


def _check_installation_id(_binding: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, str) or not _INSTALLATION_ID.fullmatch(value):
        raise _binding_error(f"installation id {_preview(value)} is not 64 lowercase hex digits")


def _check_created_at(_binding: object, _attribute: object, value: Any) -> None:
    # bool is an int subclass, and True must not pass for second 1.
    if type(value) is not int or not 0 <= value <= _MAX_CREATED_AT:
        raise _binding_error(f"created_at {_preview(value)} is not a whole number of seconds from 0 to 2**63 - 1")


def _check_signature(_binding: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, bytes) or len(value) != SIGNATURE_SIZE:
        raise _binding_error(f"the signature must be {SIGNATURE_SIZE} bytes")


def binding_text(address: str, installation_id: str, created_at: int) -> bytes:
    """Return the text an account signs (with ``personal_sign``) to bind an installation.

    It is meant to be read by a person in a wallet's signing prompt, e.g.::

        Tessera XMTP installation binding v1
        address: 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed
        installation: 3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c
        created: 1700000000
    """
    lines = (BINDING_TITLE, f"address: {address}", f"installation: {installation_id}", f"created: {created_at}")
    return "\n".join(lines).encode("utf-8")


@attrs.frozen
class InstallationBinding:
    """An account's signed statement that an installation belongs to it.

    Constructing one checks the shape of every field (raising InvalidBinding);
    only :func:`verify` checks the signature.

    Attributes:
        address: The account's checksummed address.
        installation_id: The installation's Ed25519 public key in lowercase hex.
        created_at: When the account signed, in whole seconds since the Unix epoch.
        signature: The account's ``personal_sign`` signature of :attr:`text` (r ‖ s ‖ v, 65 bytes).
    """

    address: str = attrs.field(validator=_check_address)
    installation_id: str = attrs.field(validator=_check_installation_id)
    created_at: int = attrs.field(validator=_check_created_at)
    signature: bytes = attrs.field(validator=_check_signature, repr=lambda signature: signature.hex())

    @property
    def text(self) -> bytes:
        """The text the signature signs (see :func:`binding_text`)."""
        return binding_text(self.address, self.installation_id, self.created_at)

    def to_bytes(self) -> bytes:
        """Return the canonical JSON form: sorted keys, no spaces, the signature in lowercase hex."""
        fields = {
            "address": self.address,
            "installation_id": self.installation_id,
            "created_at": self.created_at,
            "signature": self.signature.hex(),
        }
        return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode("ascii")

    @classmethod
    def from_bytes(cls, data: bytes) -> InstallationBinding:
        """Read what :meth:`to_bytes` wrote; raise InvalidBinding for anything else.

        Refused: more than :data:`MAX_BINDING_BYTES`, text that is not UTF-8
        JSON, duplicate keys, keys missing or extra, values of the wrong type
        or shape, and any encoding but the canonical one (so that one binding
        has exactly one serialized form).  The signature is not checked here:
        call :func:`verify`.
        """
        fields = _binding_fields(data)
        binding = cls(
            address=fields["address"],
            installation_id=fields["installation_id"],
            created_at=fields["created_at"],
            signature=_signature_from_hex(fields["signature"]),
        )
        if binding.to_bytes() != data:
            raise _binding_error("not in canonical form (sorted keys, no whitespace, no escapes, lowercase hex)")
        return binding


def _binding_fields(data: object) -> dict[str, Any]:
    if not isinstance(data, bytes):
        raise _binding_error(f"expected bytes, got a {type(data).__name__}")
    if len(data) > MAX_BINDING_BYTES:
        raise _binding_error(f"{len(data)} bytes is more than the {MAX_BINDING_BYTES} a binding may have")
    try:
        decoded = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_object_without_duplicates,
            parse_constant=_refuse("NaN and Infinity"),
            parse_float=_refuse("fractional numbers"),
        )
    except InvalidBinding:
        raise
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _binding_error(f"not UTF-8 JSON ({error})") from error
    return _checked_fields(decoded)


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise _binding_error("a key appears twice")
    return fields


def _refuse(what: str) -> Callable[[str], Any]:
    def refuse(text: str) -> Any:
        raise _binding_error(f"{what} have no place in a binding (found {_preview(text)})")

    return refuse


def _checked_fields(decoded: object) -> dict[str, Any]:
    if not isinstance(decoded, dict):
        raise _binding_error(f"expected a JSON object, got a {type(decoded).__name__}")
    missing = sorted(_BINDING_KEYS - decoded.keys())
    extra = sorted(map(_preview, decoded.keys() - _BINDING_KEYS))
    if missing or extra:
        raise _binding_error(f"expected exactly the keys {sorted(_BINDING_KEYS)} (missing {missing}, extra {extra})")
    return decoded


def _signature_from_hex(value: object) -> bytes:
    if not isinstance(value, str) or not _SIGNATURE_HEX.fullmatch(value):
        raise _binding_error(f"the signature must be {SIGNATURE_SIZE * 2} lowercase hex digits")
    return bytes.fromhex(value)


def bind(account: AccountKey, installation: InstallationKey, now_s: int) -> InstallationBinding:
    """Return ``account``'s signed binding of ``installation``, dated ``now_s`` (whole seconds since the epoch)."""
    text = binding_text(account.address, installation.installation_id, now_s)
    return InstallationBinding(
        address=account.address,
        installation_id=installation.installation_id,
        created_at=now_s,
        signature=account.personal_sign(text),
    )


def verify(binding: InstallationBinding, *, address: str | None = None, installation: str | None = None) -> None:
    """Check that ``binding``'s own account signed it; raise InvalidBinding if not.

    ``address`` and ``installation`` (an installation id), when given, must
    also be the ones the binding names: pass them whenever you know whom you
    are looking up, so a server cannot answer with someone else's binding.
    An ``address`` that is no valid address raises InvalidAddress.
    """
    if address is not None and parse_address(address) != binding.address:
        raise _binding_error(f"it binds account {binding.address}, not {address}")
    if installation is not None and installation.lower() != binding.installation_id:
        raise _binding_error(f"it names installation {binding.installation_id}, not {_preview(installation)}")
    signer = recover_signer(binding.text, binding.signature)
    if signer != binding.address:
        raise _binding_error(f"it claims account {binding.address}, but was signed by {signer}")
