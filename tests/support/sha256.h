// SHA-256 (FIPS 180-4) of a file, for tests that must know a regenerated fixture has the exact bytes
// its reference was computed on. Plain and unoptimised: it hashes tens of megabytes in well under a second.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tempered::testing {

class Sha256 {
public:
    void update(const uint8_t* data, size_t size) {
        bit_count_ += static_cast<uint64_t>(size) * 8;
        while (size > 0) {
            const size_t take = std::min(size, block_.size() - block_used_);
            std::memcpy(block_.data() + block_used_, data, take);
            block_used_ += take;
            data += take;
            size -= take;
            if (block_used_ == block_.size()) {
                compress();
                block_used_ = 0;
            }
        }
    }

    // The digest as 64 lowercase hex digits; the object is spent afterwards.
    std::string hex_digest() {
        const uint64_t bits = bit_count_;
        const uint8_t one_bit = 0x80, zero = 0;
        update(&one_bit, 1);
        while (block_used_ != 56) update(&zero, 1);
        for (int shift = 56; shift >= 0; shift -= 8) {
            const auto byte = static_cast<uint8_t>(bits >> shift);
            update(&byte, 1);
        }
        std::string hex;
        for (uint32_t word : state_) {
            char text[9];
            std::snprintf(text, sizeof text, "%08x", word);
            hex += text;
        }
        return hex;
    }

private:
    static uint32_t rotate_right(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

    void compress() {
        static constexpr std::array<uint32_t, 64> kRoundConstants = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
            0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
            0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
            0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
            0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
            0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
            0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
        std::array<uint32_t, 64> schedule{};
        for (int i = 0; i < 16; ++i) {
            schedule[i] = uint32_t{block_[4 * i]} << 24 | uint32_t{block_[4 * i + 1]} << 16 |
                          uint32_t{block_[4 * i + 2]} << 8 | uint32_t{block_[4 * i + 3]};
        }
        for (int i = 16; i < 64; ++i) {
            const uint32_t s0 =
                rotate_right(schedule[i - 15], 7) ^ rotate_right(schedule[i - 15], 18) ^ (schedule[i - 15] >> 3);
            const uint32_t s1 =
                rotate_right(schedule[i - 2], 17) ^ rotate_right(schedule[i - 2], 19) ^ (schedule[i - 2] >> 10);
            schedule[i] = schedule[i - 16] + s0 + schedule[i - 7] + s1;
        }
        auto [a, b, c, d, e, f, g, h] = state_;
        for (int i = 0; i < 64; ++i) {
            const uint32_t t1 = h + (rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25)) +
                                ((e & f) ^ (~e & g)) + kRoundConstants[i] + schedule[i];
            const uint32_t t2 =
                (rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        const std::array<uint32_t, 8> rounds = {a, b, c, d, e, f, g, h};
        for (size_t i = 0; i < 8; ++i) state_[i] += rounds[i];
    }

    std::array<uint32_t, 8> state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::array<uint8_t, 64> block_{};
    size_t block_used_ = 0;
    uint64_t bit_count_ = 0;
};

inline std::string sha256_of_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    Sha256 hash;
    std::vector<char> buffer(1 << 20);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
        hash.update(reinterpret_cast<const uint8_t*>(buffer.data()), static_cast<size_t>(in.gcount()));
    return hash.hex_digest();
}

}  // namespace tempered::testing
