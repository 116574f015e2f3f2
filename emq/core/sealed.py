"""Encryption at rest: the cipher that seals a text with EMQ_ENCRYPTION_KEYS and opens it again.

``seal`` and ``unseal`` are the one pair every part of emq calls to keep a value of an encrypted job
(``@emq.job(encrypt=True)`` or ``EMQ_ENCRYPT``) unreadable in the server: its call, its result, its
error and progress texts (``stored`` says which field holds what), and anything a later part keeps
for such a job. A sealed text is ``MARK`` then a Fernet token (AES-128-CBC and HMAC-SHA256, from the
``cryptography`` package, the ``[crypto]`` extra): printable ASCII without a quote, a backslash or a
newline, so a script passes it through untouched and a JSON string holds it as it is.

The keys are a list, newest first (``MultiFernet``): the first seals, every one opens, so a new key
goes first and an old one stays until ``manage.py emq rekey`` has sealed everything again with the
new one. A text no key opens raises ``CannotDecrypt`` (never the key's bytes in a message).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

from ..errors import ConfigurationError
from . import config

MARK = "enc:"  # what a sealed text starts with; never the start of JSON, so a plain field is never mistaken
INSTALL = "encryption at rest needs the cryptography package: pip install 'django-emq[crypto]'"


class CannotDecrypt(ValueError):
    """No key of EMQ_ENCRYPTION_KEYS opens a sealed text (its key was removed), or there are none."""


def is_sealed(value: Any) -> bool:
    """Whether a stored value is a sealed text (a plain field never starts with MARK)."""
    return isinstance(value, str) and value.startswith(MARK)


def seal(text: str) -> str:
    """text sealed with the newest key: MARK and a Fernet token. ConfigurationError without keys."""
    return MARK + _cipher().encrypt(text.encode()).decode("ascii")


def unseal(text: str) -> str:
    """The text a ``seal`` made; CannotDecrypt when no key opens it (or there are no keys)."""
    try:
        cipher = _cipher()
    except ConfigurationError as exc:
        raise CannotDecrypt(str(exc)) from None
    try:
        return cipher.decrypt(text[len(MARK):].encode("ascii")).decode()
    except Exception:  # InvalidToken, or bytes that are not a token at all: the same answer, no key opens it
        raise CannotDecrypt("no key of EMQ_ENCRYPTION_KEYS opens it (sealed with a key since removed?)") from None


def resealed(text: str) -> str | None:
    """text sealed again with the newest key, or None when the newest key sealed it already (``rekey``).
    CannotDecrypt when no key opens it."""
    newest, _ = _keys()
    token = text[len(MARK):].encode("ascii")
    try:
        newest.decrypt(token)
        return None
    except Exception:  # not the newest key's: open it with any and seal it with the newest
        pass
    return seal(unseal(text))


def digest(text: str) -> str:
    """A keyed hash of text (HMAC-SHA256 under a key derived from the newest key): what an encrypted job's
    unique key holds instead of a plain hash, which anyone could match against guessed arguments."""
    _, raw = _keys()
    key = hashlib.sha256(b"emq unique key\0" + raw).digest()
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def key_problems(keys: Any) -> list[str]:
    """What is wrong with an EMQ_ENCRYPTION_KEYS value, one line each, naming keys by position only."""
    if keys in (None, [], ()):
        return []
    if not isinstance(keys, list | tuple):
        return [f"EMQ_ENCRYPTION_KEYS must be a list of Fernet keys, newest first, not a {type(keys).__name__}"]
    problems = []
    for i, key in enumerate(keys):
        try:
            raw = base64.urlsafe_b64decode(key.encode() if isinstance(key, str) else key)
        except Exception:  # not base64, not text: the same problem for the operator
            raw = b""
        if len(raw) != 32:
            problems.append(f"EMQ_ENCRYPTION_KEYS[{i}] is not a Fernet key (32 url-safe base64-encoded bytes); "
                            "make one with cryptography.fernet.Fernet.generate_key()")
    return problems


def require_keys() -> None:
    """Raise ConfigurationError, saying what to do, unless jobs can be sealed and opened here."""
    _cipher()


def _cipher() -> Any:
    return config.memo("sealed.cipher", _build)[0]


def _keys() -> tuple[Any, bytes]:
    """The newest key's Fernet and its raw bytes."""
    return config.memo("sealed.cipher", _build)[1:]


def _build() -> tuple[Any, Any, bytes]:
    """(MultiFernet of every key, Fernet of the newest, the newest's bytes), made once per settings."""
    keys = config.get("EMQ_ENCRYPTION_KEYS")
    if not keys:
        raise ConfigurationError("EMQ_ENCRYPTION_KEYS is empty: an encrypted job needs at least one key; make one "
                                 "with cryptography.fernet.Fernet.generate_key() and list it, newest first")
    problems = key_problems(keys)
    if problems:
        raise ConfigurationError("; ".join(problems))
    try:
        from cryptography.fernet import Fernet, MultiFernet
    except ImportError:
        raise ConfigurationError(INSTALL) from None
    fernets = [Fernet(k) for k in keys]
    raw = keys[0].encode() if isinstance(keys[0], str) else bytes(keys[0])
    return MultiFernet(fernets), fernets[0], raw
