// Whole units divided in proportion: copy volume over the code that copied it, a site's exact count over the calling
// contexts that sampled it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace ojx {

// `total` split in proportion to `parts` (of a sum above 0) by largest remainder: each part its exact share
// rounded down, then one more to each of the parts with the largest remainders (the first of equal ones first)
// until the split sums to `total` exactly. Fewer than `parts.size()` are left to give, so each part is within one
// of its exact share, and a part of 0 gets 0.
inline std::vector<std::uint64_t> apportioned(std::uint64_t total, const std::vector<std::uint64_t>& parts) {
    __extension__ using u128 = unsigned __int128; // total × part: two 64-bit counts
    const std::uint64_t whole = std::accumulate(parts.begin(), parts.end(), std::uint64_t{0});
    std::vector<std::uint64_t> shares, remainders;
    std::uint64_t given = 0;
    for (const std::uint64_t part : parts) {
        const u128 exact = static_cast<u128>(total) * part; // the share is exact / whole
        shares.push_back(static_cast<std::uint64_t>(exact / whole));
        remainders.push_back(static_cast<std::uint64_t>(exact % whole));
        given += shares.back();
    }
    std::vector<std::size_t> order(parts.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
    for (std::size_t i = 0; given < total; ++i, ++given) ++shares[order[i]];
    return shares;
}

} // namespace ojx
