// Seeded corruption of class files for robustness tests: truncations, bit flips, overwritten bytes and fields,
// insertions and deletions. The same seed gives the same mutation on every platform (splitmix64, no standard
// distributions), so a failure is reproduced from its seed.
#pragma once

#include "ojx/bytecode/class_reader.hpp"
#include "ojx/bytecode/class_writer.hpp"
#include "ojx/bytecode/instructions.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ojx::bytecode::test {

class splitmix {
public:
    explicit splitmix(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform enough in [0, bound) for bounds far below 2^64; bound > 0.
    std::uint64_t below(std::uint64_t bound) { return next() % bound; }

private:
    std::uint64_t state_ = 0;
};

// One corrupted copy of `original` (non-empty), chosen by `seed`.
inline std::vector<std::uint8_t> mutate(const std::vector<std::uint8_t>& original, std::uint64_t seed) {
    splitmix random(seed);
    std::vector<std::uint8_t> bytes = original;
    const std::size_t edits = 1 + random.below(4);
    for (std::size_t edit = 0; edit < edits && !bytes.empty(); ++edit) {
        const std::size_t at = random.below(bytes.size());
        switch (random.below(6)) {
        case 0: // truncation
            bytes.resize(at);
            break;
        case 1: // a flipped bit
            bytes[at] = static_cast<std::uint8_t>(bytes[at] ^ (1u << random.below(8)));
            break;
        case 2: // a random byte
            bytes[at] = static_cast<std::uint8_t>(random.next());
            break;
        case 3: { // a u2 or u4 field set to a boundary value: counts, lengths and indices at their edges
            static constexpr std::uint32_t values[] = {0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xfffe,
                0xffff, 0x10000, 0x7fffffff, 0x80000000u, 0xffffffffu};
            const std::uint32_t value = values[random.below(std::size(values))];
            const std::size_t width = random.below(2) == 0 ? 2 : 4;
            for (std::size_t i = 0; i < width && at + i < bytes.size(); ++i) {
                bytes[at + i] = static_cast<std::uint8_t>(value >> (8 * (width - 1 - i)));
            }
            break;
        }
        case 4: // inserted bytes
            bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), 1 + random.below(4),
                static_cast<std::uint8_t>(random.next()));
            break;
        default: { // deleted bytes
            const std::size_t count = std::min<std::size_t>(1 + random.below(4), bytes.size() - at);
            bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                bytes.begin() + static_cast<std::ptrdiff_t>(at + count));
            break;
        }
        }
    }
    return bytes;
}

struct mutation_outcome {
    bool parsed = false;    // the reader accepted the corrupted bytes
    std::string violation;  // non-empty: a property that must hold did not
};

// Reads `bytes`. An error is a fine outcome; an accepted class must write back to exactly `bytes`, and decoding
// each of its methods must return (a value or an error).
inline mutation_outcome check_mutated(const std::vector<std::uint8_t>& bytes) {
    mutation_outcome outcome;
    auto parsed = read_class(bytes);
    if (!parsed) {
        if (parsed.error().message.empty() || !parsed.error().offset || *parsed.error().offset > bytes.size()) {
            outcome.violation = "an error without a message or with an offset outside the input: " +
                                parsed.error().describe();
        }
        return outcome;
    }
    outcome.parsed = true;
    auto written = write_class(*parsed);
    if (!written) {
        outcome.violation = "an accepted class does not write: " + written.error().describe();
        return outcome;
    }
    if (*written != bytes) {
        outcome.violation = "an accepted class writes back different bytes";
        return outcome;
    }
    for (const method_info& method : parsed->methods) {
        if (const code_attribute* code = method.code()) {
            auto decoded = decode_instructions(*code, parsed->constants);
            if (!decoded && decoded.error().message.empty()) {
                outcome.violation = "a decoding error without a message";
            }
        }
    }
    return outcome;
}

} // namespace ojx::bytecode::test
