// Storage for large preallocated tables, all bytes zero and none of it touched: calloc hands out fresh pages for
// a large block without writing them, so a table sized for the most a run can need costs resident memory only
// where it is used (the calling-context tree's nodes and hash tables, the profiler's context-state index).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace ojx {

struct free_storage {
    void operator()(void* storage) const noexcept { std::free(storage); }
};

// `count` objects of T, all bytes zero, none constructed (T is trivially destructible, so freeing it is all the
// cleanup there is).
template <class T>
using zeroed_ptr = std::unique_ptr<T[], free_storage>;

// Throws std::bad_alloc where memory is short.
template <class T>
zeroed_ptr<T> zeroed_storage(std::size_t count) {
    static_assert(std::is_trivially_destructible_v<T> && alignof(T) <= alignof(std::max_align_t));
    void* storage = std::calloc(count, sizeof(T));
    if (storage == nullptr) throw std::bad_alloc();
    return zeroed_ptr<T>(static_cast<T*>(storage));
}

} // namespace ojx
