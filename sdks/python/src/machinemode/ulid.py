"""ULIDs for ``aoi.run`` (§8.1: "ULID RECOMMENDED"), standard library only.

A ULID is 128 bits, a 48-bit Unix time in milliseconds then 80 random bits, written as 26
characters of Crockford's base32 (https://github.com/ulid/spec). Lexicographic order follows
creation time, which is why the spec recommends it for run ids.
"""

from __future__ import annotations

import os
import re
import time
from typing import Optional

__all__ = ["ULID_RE", "new_ulid"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: A canonical ULID: 26 Crockford base32 characters, the first at most 7 (128 bits).
ULID_RE = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


def new_ulid(ms: Optional[int] = None, randomness: Optional[bytes] = None) -> str:
    """A new ULID; ``ms`` and ``randomness`` (10 bytes) may be fixed for tests."""
    if ms is None:
        ms = time.time_ns() // 1_000_000
    if randomness is None:
        randomness = os.urandom(10)
    if len(randomness) != 10:
        raise ValueError("a ULID has 80 random bits (10 bytes)")
    if not 0 <= ms < 1 << 48:
        raise ValueError("a ULID's time is 48 bits of milliseconds")
    n = (ms << 80) | int.from_bytes(randomness, "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(chars))
