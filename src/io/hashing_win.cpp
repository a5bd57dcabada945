// SHA-1 and SHA-256 from Windows' BCrypt (OpenSSL is not part of a bare Windows).
#include "platform_digest.hpp"

#include <windows.h>
// after windows.h, which it needs
#include <bcrypt.h>

#include <algorithm>
#include <new>

namespace onnxstream::io::digest_detail {

namespace {

// BCryptHashData takes a ULONG length: large spans go in pieces.
constexpr std::size_t bcrypt_max_piece = 1U << 30;

void close_bcrypt(void*& hash, void*& algorithm) noexcept {
    if (hash != nullptr) ::BCryptDestroyHash(static_cast<BCRYPT_HASH_HANDLE>(hash));
    if (algorithm != nullptr) ::BCryptCloseAlgorithmProvider(static_cast<BCRYPT_ALG_HANDLE>(algorithm), 0);
    hash = nullptr;
    algorithm = nullptr;
}

}  // namespace

platform_digest::platform_digest(digest_algorithm algorithm) {
    // The algorithm provider and the hash object are allocated by the system; failing that
    // means the process is out of memory (SHA-1 and SHA-256 are always there).
    const wchar_t* name = algorithm == digest_algorithm::sha1 ? BCRYPT_SHA1_ALGORITHM : BCRYPT_SHA256_ALGORITHM;
    BCRYPT_ALG_HANDLE provider = nullptr;
    BCRYPT_HASH_HANDLE hash = nullptr;
    const bool ready = BCRYPT_SUCCESS(::BCryptOpenAlgorithmProvider(&provider, name, nullptr, 0)) &&
                       BCRYPT_SUCCESS(::BCryptCreateHash(provider, &hash, nullptr, 0, nullptr, 0, 0));
    algorithm_ = provider;
    context_ = hash;
    if (!ready) {
        close_bcrypt(context_, algorithm_);
        throw std::bad_alloc();
    }
}

platform_digest::~platform_digest() { close_bcrypt(context_, algorithm_); }

void platform_digest::update(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
        const auto piece = bytes.first(std::min(bytes.size(), bcrypt_max_piece));
        // BCryptHashData does not write through its input pointer.
        ::BCryptHashData(static_cast<BCRYPT_HASH_HANDLE>(context_),
                         reinterpret_cast<PUCHAR>(const_cast<std::byte*>(piece.data())), static_cast<ULONG>(piece.size()), 0);
        bytes = bytes.subspan(piece.size());
    }
}

void platform_digest::finish(std::span<std::uint8_t> digest) {
    ::BCryptFinishHash(static_cast<BCRYPT_HASH_HANDLE>(context_), digest.data(), static_cast<ULONG>(digest.size()), 0);
}

}  // namespace onnxstream::io::digest_detail
