// Incremental hashes fed while bytes stream through the writer: SHA-1 (the hash the ONNX
// spec names for the external_data `checksum` key), SHA-256 (the export reports' file
// digests) and XXH3-64 (onnxstream's own fast content hash, used by diff and dedupe).
// Move-only; each holds its state on the heap. SHA-1 and SHA-256 come from OpenSSL on
// Linux and from BCrypt on Windows (hashing_openssl.cpp, hashing_win.cpp).
#pragma once

#include <onnxstream/io/mapped_file.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace onnxstream::io {

using sha1_digest = std::array<std::uint8_t, 20>;

class sha1_hasher {
public:
    sha1_hasher();
    sha1_hasher(sha1_hasher&&) noexcept;
    sha1_hasher& operator=(sha1_hasher&&) noexcept;
    ~sha1_hasher();

    void update(std::span<const std::byte> bytes);
    /// The digest of everything fed so far; the hasher must not be fed afterwards.
    [[nodiscard]] sha1_digest finish();

private:
    struct state;
    std::unique_ptr<state> state_;
};

using sha256_digest = std::array<std::uint8_t, 32>;

class sha256_hasher {
public:
    sha256_hasher();
    sha256_hasher(sha256_hasher&&) noexcept;
    sha256_hasher& operator=(sha256_hasher&&) noexcept;
    ~sha256_hasher();

    void update(std::span<const std::byte> bytes);
    /// The digest of everything fed so far; the hasher must not be fed afterwards.
    [[nodiscard]] sha256_digest finish();

private:
    struct state;
    std::unique_ptr<state> state_;
};

class xxh3_hasher {
public:
    xxh3_hasher();
    xxh3_hasher(xxh3_hasher&&) noexcept;
    xxh3_hasher& operator=(xxh3_hasher&&) noexcept;
    ~xxh3_hasher();

    void update(std::span<const std::byte> bytes);
    [[nodiscard]] std::uint64_t digest() const;

private:
    struct state;
    std::unique_ptr<state> state_;
};

[[nodiscard]] sha1_digest sha1_of(std::span<const std::byte> bytes);
[[nodiscard]] std::uint64_t xxh3_of(std::span<const std::byte> bytes);
/// XXH3-64 of `bytes`, a view into `mapping`, hashed in windows of 1 MiB, each released
/// (mapped_file::release) once hashed: hashing a payload of any size keeps at most a
/// window of it resident.
[[nodiscard]] std::uint64_t xxh3_of(const mapped_file& mapping, std::span<const std::byte> bytes);

/// Lowercase hex, as written in the `checksum` key.
[[nodiscard]] std::string to_hex(std::span<const std::uint8_t> bytes);
/// Parses 40 hex digits (either case); empty when the text is not a SHA-1.
[[nodiscard]] std::optional<sha1_digest> parse_sha1_hex(std::string_view text);

}  // namespace onnxstream::io
