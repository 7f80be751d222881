#!/usr/bin/env python3
"""Known-answer vectors for sealed format 2 (docs/sealed-format-v2.md), from
the design's text alone: HKDF-SHA256, HMAC-SHA256 and AES-256-GCM from
Python's hashlib, hmac and `cryptography`, none of brsync's code.

Prints, for the account key 00 01 … 1f, the hidden key of a rule, the text a
box seals, its associated data and its sealed form. RecordCipherTests
(`aBoxHasTheBytesTheDesignGives`) holds these bytes: the vector a phone's
implementation must reproduce too. Run: python3 Tests/Scripts/sealed_box_vectors.py
"""
import base64
import hashlib
import hmac
import json

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SALT = b"brsync end-to-end v1"


def hkdf(key: bytes, info: bytes, length: int = 32) -> bytes:
    prk = hmac.new(SALT, key, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def length_prefixed(part: bytes) -> bytes:
    return len(part).to_bytes(4, "big") + part


def padded_length(count: int, minimum: int) -> int:
    if count <= minimum:
        return minimum
    if count <= 512:
        size = 1
        while size < count:
            size *= 2
        return size
    return (count + 1023) // 1024 * 1024


def smallest_class(collection: str, field: str) -> int:
    if collection == "browsers":
        return 32 if field == "e2e.key" else 64
    if collection == "rules" and field == "browser":
        return 32
    if collection == "settings" and field == "value":
        return 32
    return 16


UNSAFE = set(range(0x20)) | set(range(0x7F, 0xA0)) | {0x200E, 0x200F, 0x061C, 0x200B, 0xFEFF, 0x180E, 0x2028, 0x2029}
UNSAFE |= set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | set(range(0x2060, 0x2065))
SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def string(text: str) -> str:
    """A JSON string as docs/protocol.md gives it ("Canonical JSON"): the
    quote, the backslash, line feed, carriage return and tab by their short
    escapes; every other control, DEL, C1 control, bidirectional control,
    invisible separator and U+2028/2029 as \\u and 4 lowercase hex digits;
    everything else as its UTF-8."""
    out = []
    for char in text:
        if char in SHORT:
            out.append(SHORT[char])
        elif ord(char) in UNSAFE:
            out.append("\\u%04x" % ord(char))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def compact(value) -> str:
    if isinstance(value, str):
        return string(value)
    if isinstance(value, dict):
        return "{" + ",".join(string(k) + ":" + compact(value[k]) for k in sorted(value, key=lambda n: n.encode())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(compact(v) for v in value) + "]"
    return json.dumps(value)


def padded(value, collection: str, field: str) -> str:
    text = compact(value)
    count = len(text.encode())
    return text + " " * (padded_length(count, smallest_class(collection, field)) - count)


def box_text(collection, key, fields, stamp, manifest_f, versions) -> bytes:
    parts = ['{"k":', padded(key, collection, "e2e.key"), ',"f":{']
    for index, name in enumerate(sorted(fields, key=lambda n: n.encode())):
        if index:
            parts.append(",")
        parts.append(compact(name) + ":" + padded(fields[name], collection, name))
    parts.append("}")
    if versions is not None:
        manifest = "{"
        below = {n: s for n, s in manifest_f.items() if s < stamp}
        if below:
            manifest += '"f":{' + ",".join(
                compact(n) + ":" + compact(below[n]) for n in sorted(below, key=lambda n: n.encode())) + "},"
        manifest += '"v":{' + ",".join(compact(d) + ":" + str(versions[d]) for d in sorted(versions)) + "}}"
        parts.append(',"m":' + manifest)
    parts.append("}")
    return "".join(parts).encode()


def vector(title, collection, key, fields, stamp, manifest_f, versions) -> None:
    account = bytes(range(32))
    value_key = hkdf(account, b"values")
    name_key = hkdf(account, b"record keys")
    nonce_key = hkdf(account, b"nonces")
    hidden = "h1." + b64url(hmac.new(name_key, collection.encode() + b"\0" + key.encode(), hashlib.sha256).digest())
    text = box_text(collection, key, fields, stamp, manifest_f, versions)
    associated = b"brsync-e2e-v2" + b"".join(length_prefixed(p.encode()) for p in (collection, hidden, stamp))
    nonce = hmac.new(nonce_key, associated + text, hashlib.sha256).digest()[:12]
    sealed = "e2." + b64url(nonce + AESGCM(value_key).encrypt(nonce, text, associated))
    print("#", title)
    print("hidden key:", hidden)
    print("box text:", text.decode())
    print("associated data (hex):", associated.hex())
    print("nonce (hex):", nonce.hex())
    print("box:", sealed)
    print()


def main() -> None:
    stamp = "000001a214472554-00000000-db22d30bcc46d6a9"
    older = "000001a214470000-00000003-db22d30bcc46d6a9"
    vector(
        "a rule's write (aBoxHasTheBytesTheDesignGives)", "rules", "zoom.us",
        {"browser": "chrome", "priority": 3, "deleted": False}, stamp, {"pattern": older}, {"db22d30bcc46d6a9": 2})
    # Text that needs escaping, non-ASCII names ordered by their bytes, a
    # manifest naming fields that need escaping too.
    vector(
        "escapes (aBoxOfTextThatNeedsEscapingHasTheBytesTheDesignGives)", "rules", "b\u00fccher.example",
        {"browser": 'fire"fox\\\t\u0001\u007f\u200e\u2028\u00e9', "origin": "a\nb\u061c\u180e\ufeff", "\u00e9t\u00e9": 1,
         "zone": {"b": [1, "\u0085"], "a": None, "f": 0, "e\u0301": 2}},
        stamp, {"pattern": older, 'na"me\u00e9': older}, {"db22d30bcc46d6a9": 2, "0a0b0c0d0e0f1011": 1})


if __name__ == "__main__":
    main()
