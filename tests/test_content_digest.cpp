#include "ojx/content_digest.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>

namespace {

std::array<unsigned char, 256> patterned_bytes() {
    std::array<unsigned char, 256> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
    return bytes;
}

std::uint64_t digest_of(const unsigned char* data, std::size_t size) {
    ojx::content_digest hash;
    hash.update(data, size);
    return hash.value();
}

} // namespace

TEST_CASE("a digest depends on the bytes, not on how they are split into word-aligned pieces") {
    const auto bytes = patterned_bytes();
    for (std::size_t size : {8u, 24u, 32u, 64u, 72u, 100u, 256u}) {
        const std::uint64_t whole = digest_of(bytes.data(), size);
        for (std::size_t cut = 8; cut < size; cut += 8) {
            ojx::content_digest pieces;
            pieces.update(bytes.data(), cut);
            pieces.update(bytes.data() + cut, size - cut);
            INFO("size " << size << ", cut at " << cut);
            CHECK(pieces.value() == whole);
        }
    }
}

TEST_CASE("every single-bit change in a window changes its digest") {
    auto bytes = patterned_bytes();
    for (std::size_t size : {5u, 64u, 256u}) {
        const std::uint64_t original = digest_of(bytes.data(), size);
        for (std::size_t bit = 0; bit < 8 * size; ++bit) {
            bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
            const std::uint64_t changed = digest_of(bytes.data(), size);
            bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
            INFO("size " << size << ", bit " << bit);
            REQUIRE(changed != original);
        }
    }
}

TEST_CASE("words that trade places, and windows that differ only in length, digest differently") {
    auto bytes = patterned_bytes();
    const std::uint64_t original = digest_of(bytes.data(), 64);
    for (std::size_t a = 0; a < 8; ++a) {
        for (std::size_t b = a + 1; b < 8; ++b) {
            std::array<unsigned char, 64> swapped;
            std::memcpy(swapped.data(), bytes.data(), 64);
            std::memcpy(swapped.data() + 8 * a, bytes.data() + 8 * b, 8);
            std::memcpy(swapped.data() + 8 * b, bytes.data() + 8 * a, 8);
            INFO("words " << a << " and " << b);
            CHECK(digest_of(swapped.data(), 64) != original);
        }
    }
    const std::array<unsigned char, 16> zeros{};
    CHECK(digest_of(zeros.data(), 8) != digest_of(zeros.data(), 16));
    CHECK(digest_of(zeros.data(), 3) != digest_of(zeros.data(), 4));
}
