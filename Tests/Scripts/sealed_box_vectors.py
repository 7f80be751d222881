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


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


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


def main() -> None:
    account = bytes(range(32))
    value_key = hkdf(account, b"values")
    name_key = hkdf(account, b"record keys")
    nonce_key = hkdf(account, b"nonces")

    collection, key = "rules", "zoom.us"
    hidden = "h1." + b64url(hmac.new(name_key, collection.encode() + b"\0" + key.encode(), hashlib.sha256).digest())
    stamp = "000001a214472554-00000000-db22d30bcc46d6a9"
    older = "000001a214470000-00000003-db22d30bcc46d6a9"
    fields = {"browser": "chrome", "priority": 3, "deleted": False}
    text = box_text(collection, key, fields, stamp, {"pattern": older}, {"db22d30bcc46d6a9": 2})

    associated = b"brsync-e2e-v2" + b"".join(length_prefixed(p.encode()) for p in (collection, hidden, stamp))
    nonce = hmac.new(nonce_key, associated + text, hashlib.sha256).digest()[:12]
    sealed = "e2." + b64url(nonce + AESGCM(value_key).encrypt(nonce, text, associated))

    print("hidden key:", hidden)
    print("box text:", text.decode())
    print("associated data (hex):", associated.hex())
    print("nonce (hex):", nonce.hex())
    print("box:", sealed)


if __name__ == "__main__":
    main()
