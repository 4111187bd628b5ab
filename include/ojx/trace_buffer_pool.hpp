// A fixed set of trace block buffers, allocated once, passed between the thread that fills them (a trace_writer's
// owner, through `sink()`) and the thread that writes them out (a backend's writer thread): the filler hands over a
// closed block and takes an empty buffer without waiting — when none is free it gets none, and the trace_writer
// counts the events it cannot write — and the writer thread takes filled blocks in order and gives their buffers
// back once written.
//
// Two single-producer single-consumer rings carry buffer numbers: `filled` (filler → writer thread) and `free`
// (writer thread → filler). Each buffer is in at most one ring at a time, so a ring as long as the pool never
// overflows. One filler at a time: several threads may fill in turn if something serializes them (the profiler's
// lock), which also orders their ring operations. Standard C++ only; the thread and the file are the backend's.
#pragma once

#include "ojx/trace_writer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <thread>

namespace ojx {

class trace_buffer_pool {
public:
    // Allocates every buffer now; nothing is allocated afterwards.
    trace_buffer_pool(std::size_t buffer_count, std::size_t buffer_size)
        : buffer_count_(buffer_count == 0 ? 1 : buffer_count),
          buffer_size_(buffer_size),
          storage_(std::make_unique<std::byte[]>(buffer_count_ * buffer_size_)),
          free_(buffer_count_),
          filled_(buffer_count_) {
        for (std::size_t buffer = 0; buffer < buffer_count_; ++buffer) free_.push(buffer);
    }
    trace_buffer_pool(const trace_buffer_pool&) = delete;
    trace_buffer_pool& operator=(const trace_buffer_pool&) = delete;

    std::size_t buffer_count() const noexcept { return buffer_count_; }
    std::size_t buffer_size() const noexcept { return buffer_size_; }

    // ---- The filler's side. Signal-safe: wait-free, allocates nothing. ----

    // An empty buffer, or an empty span when every buffer is filled or being written (unless the filler asked
    // to wait for one).
    std::span<std::byte> take() noexcept {
        auto buffer = free_.pop();
        while (!buffer && patient_) {
            std::this_thread::yield();
            buffer = free_.pop();
        }
        if (!buffer) {
            ++refusals_;
            return {};
        }
        return {storage_.get() + *buffer * buffer_size_, buffer_size_};
    }
    // From now on take() waits for the writer thread to give a buffer back rather than refuse: for the trace's
    // last records (names, counters, the end record), written outside signal handlers and at a moment when
    // waiting is acceptable. Not signal-safe once set.
    void wait_for_buffers() noexcept { patient_ = true; }
    // Queues a closed block for the writer thread. `closed` must lie at the start of a buffer from take().
    void hand_over(std::span<const std::byte> closed) noexcept {
        const auto offset = static_cast<std::size_t>(closed.data() - storage_.get());
        filled_.push(filled_block_entry{offset / buffer_size_, closed.size()});
    }
    // What a trace_writer calls when a block is closed (or to ask again after a refusal).
    trace_block_sink sink() noexcept { return {this, &exchange}; }
    static std::span<std::byte> exchange(void* pool, std::span<const std::byte> closed) noexcept {
        auto& self = *static_cast<trace_buffer_pool*>(pool);
        if (!closed.empty()) self.hand_over(closed);
        return self.take();
    }
    // Times take() found no free buffer (read by the filler, or once filling has stopped).
    std::uint64_t refusals() const noexcept { return refusals_; }

    // ---- The writer thread's side. ----

    struct filled_block {
        std::size_t buffer = 0;
        std::span<const std::byte> bytes; // the block as it goes into the file
    };
    // The oldest block handed over and not yet taken, if any.
    std::optional<filled_block> next_filled() noexcept {
        const auto entry = filled_.pop();
        if (!entry) return std::nullopt;
        return filled_block{entry->buffer, {storage_.get() + entry->buffer * buffer_size_, entry->length}};
    }
    // The block in `buffer` is written: the buffer may be filled again.
    void give_back(std::size_t buffer) noexcept { free_.push(buffer); }

private:
    struct filled_block_entry {
        std::size_t buffer = 0;
        std::size_t length = 0;
    };

    // One producer, one consumer; `push` fails only when full, which the pool's invariant rules out.
    template <class T>
    class ring {
        static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "signal-safe rings need lock-free atomics");

    public:
        explicit ring(std::size_t capacity) : capacity_(capacity), items_(std::make_unique<T[]>(capacity)) {}

        bool push(const T& item) noexcept {
            const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
            if (tail - head_.load(std::memory_order_acquire) == capacity_) return false;
            items_[tail % capacity_] = item;
            tail_.store(tail + 1, std::memory_order_release);
            return true;
        }
        std::optional<T> pop() noexcept {
            const std::uint64_t head = head_.load(std::memory_order_relaxed);
            if (head == tail_.load(std::memory_order_acquire)) return std::nullopt;
            const T item = items_[head % capacity_];
            head_.store(head + 1, std::memory_order_release);
            return item;
        }

    private:
        std::size_t capacity_;
        std::unique_ptr<T[]> items_;
        alignas(64) std::atomic<std::uint64_t> head_{0}; // next to pop (the consumer's)
        alignas(64) std::atomic<std::uint64_t> tail_{0}; // next to push (the producer's)
    };

    std::size_t buffer_count_;
    std::size_t buffer_size_;
    std::unique_ptr<std::byte[]> storage_;
    ring<std::size_t> free_;
    ring<filled_block_entry> filled_;
    std::uint64_t refusals_ = 0; // the filler's
    bool patient_ = false;       // the filler's
};

} // namespace ojx
