// The system's SHA-1 and SHA-256 behind one small class: OpenSSL's EVP interface on Linux
// (hashing_openssl.cpp), BCrypt on Windows (hashing_win.cpp). sha1_hasher and
// sha256_hasher (hashing.cpp) are written once on top of it. Internal to io/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace onnxstream::io::digest_detail {

enum class digest_algorithm : std::uint8_t { sha1, sha256 };

class platform_digest {
public:
    /// Throws std::bad_alloc when the system cannot give a hash object (out of memory:
    /// SHA-1 and SHA-256 are always there).
    explicit platform_digest(digest_algorithm algorithm);
    platform_digest(const platform_digest&) = delete;
    platform_digest& operator=(const platform_digest&) = delete;
    ~platform_digest();

    void update(std::span<const std::byte> bytes);
    /// Writes the digest (20 bytes for SHA-1, 32 for SHA-256); no update afterwards.
    void finish(std::span<std::uint8_t> digest);

private:
    void* context_ = nullptr;  // EVP_MD_CTX* / BCRYPT_HASH_HANDLE
#if defined(_WIN32)
    void* algorithm_ = nullptr;  // BCRYPT_ALG_HANDLE
#endif
};

}  // namespace onnxstream::io::digest_detail
