"""_torch_store.py - how the ranks of a torch backend group agree on a tutti unique id
through the group's torch store: rank 0 makes it and puts it there, sealed with a key derived
from TUTTI_SECRET (or TUTTI_SECRET_FILE) when one is set (_seal: whoever can read the store
learns no usable secret, and a rank with another secret is told so), the others read it."""
import datetime
import hashlib
import hmac
import os
import stat
import string
import warnings

import tutti


# What rank 0 puts into the store: the id in the clear (no secret), or sealed.
_CLEAR, _SEALED = b"TUID-clear-1", b"TUID-sealed-1"
_NONCE = 16
_TAG = 32
_SECRET_FILE_MAX = 4096  # as the C library's TUTTI_SECRET_FILE (src/comm/launch.h)


def _secret_file(path):
    """The text of TUTTI_SECRET_FILE, with the C library's rules: opened without blocking, a
    regular file of 1 to 4096 bytes; anything else is an error naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise ValueError(f"tutti backend: TUTTI_SECRET_FILE {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"tutti backend: TUTTI_SECRET_FILE {path} is not a regular file")
        if st.st_mode & 0o077:
            warnings.warn(f"tutti backend: TUTTI_SECRET_FILE {path} is readable by other users "
                          "(chmod 600 it)", RuntimeWarning, stacklevel=4)
        if st.st_size == 0 or st.st_size > _SECRET_FILE_MAX:
            raise ValueError(f"tutti backend: TUTTI_SECRET_FILE {path} has {st.st_size} bytes: "
                             "it must hold the job secret, 32 hex digits")
        return os.read(fd, _SECRET_FILE_MAX).decode("ascii", errors="replace")
    finally:
        os.close(fd)


def _job_secret():
    """The 16 bytes of TUTTI_SECRET, else of TUTTI_SECRET_FILE, else None (no secret). A
    variable that is set but empty is an error, as in the C library."""
    for name in ("TUTTI_SECRET", "TUTTI_SECRET_FILE"):
        if os.environ.get(name) == "":
            raise ValueError(f"tutti backend: {name} is set but empty: unset it, or give it "
                             "the job's secret")
    text, what = os.environ.get("TUTTI_SECRET", ""), "TUTTI_SECRET"
    if not text:
        path = os.environ.get("TUTTI_SECRET_FILE", "")
        if not path:
            return None
        text, what = _secret_file(path), f"TUTTI_SECRET_FILE {path}"
    text = text.strip()
    if len(text) != 32 or any(c not in string.hexdigits for c in text):
        raise ValueError(f"tutti backend: {what} must hold exactly 32 hex digits (128 bits)")
    return bytes.fromhex(text)


def _keys(secret):
    """Two keys from the job secret: one for the key stream, one for the tag."""
    return (hmac.new(secret, b"tutti-torch-store-enc", hashlib.sha256).digest(),
            hmac.new(secret, b"tutti-torch-store-mac", hashlib.sha256).digest())


def _stream(enc, nonce, key, n):
    """n bytes of HMAC-SHA-256 in counter mode over (nonce, store key, counter)."""
    out = b""
    for i in range((n + 31) // 32):
        out += hmac.new(enc, nonce + key + i.to_bytes(4, "big"), hashlib.sha256).digest()
    return out[:n]


def _seal(raw, secret, key):
    """Encrypt-then-MAC the unique id for the store: a fresh nonce, the id XORed with a key
    stream, and a tag over all of it and the store key (so an id cannot be moved to another
    group's key). Without the job secret, neither the id's secret nor its root can be read."""
    enc, mac = _keys(secret)
    nonce = os.urandom(_NONCE)
    body = bytes(a ^ b for a, b in zip(raw, _stream(enc, nonce, key, len(raw))))
    tag = hmac.new(mac, _SEALED + nonce + key + body, hashlib.sha256).digest()
    return _SEALED + nonce + body + tag


def _open(blob, secret, key):
    """The unique id out of what rank 0 stored, checked against this rank's secret."""
    if blob.startswith(_CLEAR):
        if secret is not None:
            raise ValueError("tutti backend: rank 0 put the unique id into torch's store in the "
                             "clear (it runs without TUTTI_SECRET) but this rank has "
                             "TUTTI_SECRET set: set the same TUTTI_SECRET on every rank")
        return blob[len(_CLEAR):]
    if not blob.startswith(_SEALED) or len(blob) < len(_SEALED) + _NONCE + _TAG:
        raise ValueError("tutti backend: what torch's store holds for the unique id is not "
                         "something tutti put there")
    if secret is None:
        raise ValueError("tutti backend: rank 0 sealed the unique id with its TUTTI_SECRET; "
                         "set the same TUTTI_SECRET on this rank")
    enc, mac = _keys(secret)
    nonce = blob[len(_SEALED):len(_SEALED) + _NONCE]
    body, tag = blob[len(_SEALED) + _NONCE:-_TAG], blob[-_TAG:]
    want = hmac.new(mac, _SEALED + nonce + key + body, hashlib.sha256).digest()
    if not hmac.compare_digest(tag, want):
        raise ValueError("tutti backend: the unique id in torch's store does not open with this "
                         "rank's TUTTI_SECRET (rank 0 has another TUTTI_SECRET, or the store "
                         "was changed)")
    return bytes(a ^ b for a, b in zip(body, _stream(enc, nonce, key, len(body))))


def join(store, rank, world_size, timeout):
    """A tutti communicator of world_size ranks, its unique id passed through `store`."""
    # Each group made on this store gets its own key. The members count themselves in: a
    # rank cannot begin the next group on the store before every member of this one has
    # counted (the communicator's bootstrap waits for all), so the counter / world_size is
    # the same generation on every rank, whichever other groups each rank belongs to.
    generation = (store.add(f"tutti/joins/{world_size}", 1) - 1) // world_size
    key = f"tutti/unique_id/{world_size}/{generation}"
    secret = _job_secret()
    if rank == 0:
        uid = tutti.UniqueId.new()
        if secret is None:
            warnings.warn("tutti backend: TUTTI_SECRET is not set, so the unique id goes into "
                          "torch's store as it is: whoever can read the store (torch's TCPStore "
                          "does not authenticate: anyone who can reach MASTER_ADDR:MASTER_PORT) "
                          "can join this group's communicator and read or change its data. Set "
                          "TUTTI_SECRET (32 hex digits) to the same value on every rank",
                          RuntimeWarning, stacklevel=3)
            store.set(key, _CLEAR + bytes(uid))
        else:
            store.set(key, _seal(bytes(uid), secret, key.encode()))
    else:
        uid = tutti.UniqueId(_open(store.get(key), secret, key.encode()))
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else None
    return tutti.Comm(world_size, uid, rank, timeout=seconds)
