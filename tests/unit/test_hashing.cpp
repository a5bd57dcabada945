#include <onnxstream/io/hashing.hpp>

#include "proto_builder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream::io;

TEST_CASE("SHA-1 of known strings (FIPS 180 examples)") {
    CHECK(to_hex(sha1_of(test_support::to_bytes("abc"))) == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(to_hex(sha1_of({})) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    sha1_hasher incremental;
    incremental.update(test_support::to_bytes("a"));
    incremental.update(test_support::to_bytes("bc"));
    CHECK(to_hex(incremental.finish()) == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST_CASE("xxh3 streaming equals one shot") {
    const auto bytes = test_support::to_bytes("the quick brown fox jumps over the lazy dog");
    xxh3_hasher h;
    h.update(std::span(bytes).first(10));
    h.update(std::span(bytes).subspan(10));
    CHECK(h.digest() == xxh3_of(bytes));
    CHECK(xxh3_of(bytes) != xxh3_of(test_support::to_bytes("the quick brown fox jumps over the lazy cat")));
}

TEST_CASE("parse_sha1_hex") {
    const auto digest = parse_sha1_hex("A9993E364706816ABA3E25717850C26C9CD0D89D");
    REQUIRE(digest);
    CHECK(to_hex(*digest) == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK_FALSE(parse_sha1_hex("abc"));
    CHECK_FALSE(parse_sha1_hex("z9993e364706816aba3e25717850c26c9cd0d89d"));
}

TEST_CASE("SHA-256 of known strings (FIPS 180 examples), fed in one piece or several") {
    sha256_hasher empty;
    CHECK(to_hex(empty.finish()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hasher incremental;
    incremental.update(test_support::to_bytes("a"));
    incremental.update(test_support::to_bytes("bc"));
    CHECK(to_hex(incremental.finish()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("SHA-1 of FIPS 180-2's two-block message and of a million 'a', fed across block boundaries") {
    CHECK(to_hex(sha1_of(test_support::to_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))) ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    const std::string million(1000000, 'a');
    const auto bytes = test_support::to_bytes(million);
    sha1_hasher h;
    for (std::size_t at = 0, step = 1; at < bytes.size(); at += step, step = step * 3 % 1000 + 1)
        h.update(std::span(bytes).subspan(at, std::min(step, bytes.size() - at)));
    CHECK(to_hex(h.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST_CASE("XXH3-64 (seed 0) of the reference implementation's test vectors") {
    CHECK(xxh3_of({}) == 0x2D06800538D394C2ULL);  // xxHash's tests/sanity: the empty input
    CHECK(xxh3_of(test_support::to_bytes("a")) == 0xE6C632B61E964E1FULL);
    CHECK(xxh3_of(test_support::to_bytes("abc")) == 0x78AF5F94892F3950ULL);
}
