"""Java String.hashCode known values (UTF-16 units, signed 32-bit wrap) and the masked CRC."""

from __future__ import annotations

import zlib

import pytest

from orbitmq.message.hashing import crc32, index_key_hash, java_string_hash, tags_code


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("TagA", 2598919),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("ä", 228),
        ("中文", 646394),
        ("😀", 1772899),  # U+1F600 = surrogates D83D DE00: two UTF-16 units
        ("polygenelubricants", -2147483648),  # wraps to exactly Integer.MIN_VALUE
        ("Hello World", -862545276),
    ],
)
def test_java_string_hash_known_values(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_long_mixed_text_agrees_with_the_unit_by_unit_definition() -> None:
    text = "x" * 1000 + "é" * 10 + "𝄞"
    raw = text.encode("utf-16-be")
    acc = 0
    for i in range(0, len(raw), 2):
        acc = (acc * 31 + int.from_bytes(raw[i : i + 2], "big")) % 2**32
    h = java_string_hash(text)
    assert -(2**31) <= h < 2**31
    assert h == (acc - 2**32 if acc >= 2**31 else acc)


def test_tags_code_is_zero_without_tags_and_sign_extended_otherwise() -> None:
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("polygenelubricants") == -2147483648
    assert tags_code("TagA") == 2598919
    assert tags_code("TagA") == 2598919  # cached
    long_tag = "t" * 300  # too long to cache: computed each time, same value
    assert tags_code(long_tag) == java_string_hash(long_tag) == tags_code(long_tag)


def test_index_key_hash_is_abs_with_min_value_as_zero() -> None:
    assert index_key_hash("polygenelubricants") == 0
    assert index_key_hash("Hello World") == 862545276
    assert index_key_hash("TagA") == 2598919


def test_crc32_is_masked_to_31_bits() -> None:
    data = b"123456789"
    assert zlib.crc32(data) == 0xCBF43926
    assert crc32(data) == 0xCBF43926 & 0x7FFFFFFF == 0x4BF43926
    assert crc32(memoryview(bytearray(data))) == 0x4BF43926
    assert crc32(b"") == 0
