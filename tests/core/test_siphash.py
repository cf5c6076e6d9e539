"""SipHash-2-4 against the reference test vectors (Aumasson & Bernstein, vectors.h)."""

from __future__ import annotations

import pytest

from netstack.core.siphash import siphash, siphash_key

KEY = siphash_key(bytes(range(16)))  # 00 01 02 … 0f, the paper's key


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "310e0edd47db6f72"),
        (1, "fd67dc93c539f874"),
        (7, "37d1018bf50002ab"),
        (8, "6224939a79f5f593"),
        (15, "e545be4961ca29a1"),  # the paper's Appendix A example
        (63, "724506eb4c328a95"),
    ],
)
def test_reference_vectors(n: int, expected: str) -> None:
    # message 00 01 02 … n-1; the output bytes are the result in little-endian order
    assert siphash(bytes(range(n)), KEY).to_bytes(8, "little").hex() == expected


def test_key_must_be_16_bytes() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        siphash_key(b"short")
