"""Libraries that protocol plugins share; none of them is a plugin.

* :mod:`protocols.libraries.mls` — the RFC 9420 engine (codec, key schedule,
  tree, group state, decrypt-ahead in a helper process);
* :mod:`protocols.libraries.delivery` — the wire protocol of ``tessera serve``
  (frames, records, the client);
* :mod:`protocols.libraries.at_rest` — values sealed under a user's key;
* :mod:`protocols.libraries.erasable` — values whose key is destroyed when they
  are replaced (forward secrecy at rest).
* :mod:`protocols.libraries.xmtp_wire` — the XMTP v3 API's messages and
  services (our own ``.proto`` files and the code generated from them).

Plugins (``protocols/<name>/``, found through the ``tessera.protocols`` entry
points) may import any of them.  A library may import ``core``,
``schema_loader``, ``projectors``, ``jobs`` and another library below it
(``erasable`` builds on ``at_rest``), never a plugin.
"""
