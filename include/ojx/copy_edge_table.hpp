// The sampled copy graph as a signal handler can keep it: a fixed number of edges in one preallocated table, each
// with its sufficient statistics (copy_estimate.hpp) and the access contexts of its samples (copy_code_slots.hpp),
// filled with no allocation and no lock (the caller holds the host's). An edge that finds the table full is
// counted, not kept. `graph()` gives the sampled_copy_graph and `code()` its edges' code, outside handlers; every
// kept edge's code counts each of its samples once.
#pragma once

#include "ojx/copy_code.hpp"
#include "ojx/copy_code_slots.hpp"
#include "ojx/copy_estimate.hpp"
#include "ojx/copy_graph.hpp"
#include "ojx/sampled_copy_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ojx {

class copy_edge_table {
public:
    // Room for `capacity` edges (rounded up to a power of two, kept at most three quarters full).
    explicit copy_edge_table(std::size_t capacity)
        : mask_(table_size(capacity) - 1), limit_(capacity), slots_(std::make_unique<slot[]>(mask_ + 1)) {}

    // Signal-safe: one sample of `edge` at `period`, taken in access context `code` (no_context: unknown). False
    // when the edge is new and the table is full.
    bool add(const copy_edge& edge, std::uint64_t period, context_id code = no_context) noexcept {
        for (std::size_t i = hash(edge) & mask_;; i = (i + 1) & mask_) {
            slot& s = slots_[i];
            if (s.used && s.edge == edge) {
                s.volume.add(period);
                s.code.add(code);
                return true;
            }
            if (s.used) continue;
            if (size_ == limit_) {
                ++dropped_;
                return false;
            }
            s.used = true;
            s.edge = edge;
            s.volume.add(period);
            s.code.add(code);
            ++size_;
            return true;
        }
    }

    std::size_t size() const noexcept { return size_; }
    std::uint64_t dropped() const noexcept { return dropped_; }

    sampled_copy_graph graph() const {
        sampled_copy_graph graph;
        for (std::size_t i = 0; i <= mask_; ++i)
            if (slots_[i].used) graph.add(slots_[i].edge, slots_[i].volume);
        return graph;
    }
    copy_code code() const {
        copy_code code;
        for (std::size_t i = 0; i <= mask_; ++i)
            if (slots_[i].used) code.add(slots_[i].edge, slots_[i].code.code());
        return code;
    }

private:
    struct slot {
        bool used = false;
        copy_edge edge{};
        sampled_volume volume{};
        copy_code_slots code{};
    };

    static std::size_t table_size(std::size_t capacity) {
        std::size_t size = 8;
        while (size / 4 * 3 < capacity) size *= 2;
        return size;
    }
    static std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        return h;
    }
    static std::size_t hash(const copy_edge& e) noexcept {
        std::uint64_t h = e.width;
        for (const copy_node& n : {e.from, e.to}) {
            h = mix(h, static_cast<std::uint64_t>(n.kind));
            h = mix(h, n.site);
            h = mix(h, n.offset);
        }
        return static_cast<std::size_t>(h * 0xff51afd7ed558ccdULL >> 17);
    }

    std::size_t mask_;
    std::size_t limit_;
    std::unique_ptr<slot[]> slots_;
    std::size_t size_ = 0;
    std::uint64_t dropped_ = 0;
};

} // namespace ojx
