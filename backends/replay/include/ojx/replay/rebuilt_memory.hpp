// The program's memory rebuilt from a trace of every access: zero-filled where objects are allocated, written by
// every recorded store, fill and load value, moved with its objects. A replay's profiler reads it, and its
// emulated debug registers trap on it, as the live run's did on the real memory: the same bytes, since the trace
// recorded everything that changed them. Sparse, in pages: only what the trace touched exists; a read of bytes
// it never touched fails, as a read of unmapped memory would.
#pragma once

#include "ojx/types.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace ojx::replay {

class rebuilt_memory {
public:
    static constexpr std::size_t page_size = 4096;

    // An allocation: the object's bytes are zero (docs/trace-format.md: allocators in traces of every access
    // zero-fill, or the trace fills the object after its allocation).
    void zero(address where, std::uint64_t size) {
        for_each_piece(where, size, [this](std::uint64_t number) { return page_for(number); }, [](std::byte* bytes, std::size_t, std::size_t length) {
            std::memset(bytes, 0, length);
        });
    }

    void write(address where, std::span<const std::byte> bytes) {
        for_each_piece(where, bytes.size(), [this](std::uint64_t number) { return page_for(number); }, [&](std::byte* page_bytes, std::size_t done, std::size_t length) {
            std::memcpy(page_bytes, bytes.data() + done, length);
        });
    }

    // Copies [from, from + size) to [to, to + size), as a moving collector does (the ranges may overlap).
    void move(address from, address to, std::uint64_t size) {
        std::vector<std::byte> bytes(static_cast<std::size_t>(size));
        if (!read(from, bytes.data(), bytes.size())) return; // never written: nothing known to move
        write(to, bytes);
    }

    // The memory_reader contract: false when any byte of the range was never written.
    bool read(address where, void* out, std::size_t size) const noexcept {
        bool known = true;
        auto* target = static_cast<std::byte*>(out);
        for_each_piece(where, size, [this](std::uint64_t number) { return existing_page(number); },
                       [&](std::byte* bytes, std::size_t done, std::size_t length) {
                           if (bytes == nullptr) known = false;
                           else std::memcpy(target + done, bytes, length);
                       });
        return known;
    }

    // What the emulated machine loads and stores: `width` bytes, little-endian, zero-extended.
    std::uint64_t load(address where, std::uint8_t width) const noexcept {
        std::uint64_t value = 0;
        read(where, &value, std::min<std::size_t>(width, sizeof value));
        return value;
    }
    void store(address where, std::uint8_t width, std::uint64_t value) {
        write(where, std::as_bytes(std::span(&value, 1)).first(std::min<std::size_t>(width, sizeof value)));
    }

    std::size_t pages() const noexcept { return pages_.size(); }

private:
    using page = std::array<std::byte, page_size>;

    // Calls `visit(bytes, done, length)` for each page-sized piece of [where, where + size), `done` bytes into the
    // range, with the page `page_of(number)` gives (null: never written).
    template <class PageOf, class Visit>
    static void for_each_piece(address where, std::uint64_t size, PageOf page_of, Visit visit) {
        std::uint64_t done = 0;
        while (done < size) {
            const address at = where + done;
            const std::size_t offset = static_cast<std::size_t>(at % page_size);
            const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(page_size - offset, size - done));
            page* p = page_of(at / page_size);
            visit(p ? p->data() + offset : nullptr, static_cast<std::size_t>(done), length);
            done += length;
        }
    }

    page* page_for(std::uint64_t number) {
        if (page* p = existing_page(number)) return p;
        page* p = pages_.emplace(number, std::make_unique<page>()).first->second.get();
        last_number_ = number;
        last_page_ = p;
        return p;
    }

    page* existing_page(std::uint64_t number) const noexcept {
        // Accesses come in runs within one page: the last page found answers most of them.
        if (last_page_ != nullptr && last_number_ == number) return last_page_;
        const auto found = pages_.find(number);
        if (found == pages_.end()) return nullptr;
        last_number_ = number;
        last_page_ = found->second.get();
        return last_page_;
    }

    std::unordered_map<std::uint64_t, std::unique_ptr<page>> pages_;
    mutable std::uint64_t last_number_ = 0;
    mutable page* last_page_ = nullptr;
};

} // namespace ojx::replay
