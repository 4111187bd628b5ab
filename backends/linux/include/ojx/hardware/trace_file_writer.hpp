// Writes a trace file asynchronously: blocks closed by a trace_writer go through a trace_buffer_pool to a thread
// of this writer's own, which write(2)s them to the file and gives their buffers back. The thread that fills the
// blocks (under the profiler's lock, possibly in a signal handler) never waits on I/O: it hands a block over and
// takes a free buffer, or none (the trace_writer then counts and reports the events it loses).
//
// Life cycle: open() (file, header, buffers, thread), a trace_writer built on first_buffer() and sink(), the
// events, the writer's finish(), then close() here — which waits for every block to reach the file.
//
// The file (agent_output_file.hpp: open_output_stream) is created 0600 — a trace holds the program's memory —
// and its descriptor is kept high and checked before every write and the close: a program that closed it and was
// given its number for a file of its own never receives trace bytes. Invariant: the file always ends at a block
// boundary of what reached it (a block cut short by a failed write is cut off again), so a trace that stopped
// early — a full disk, the descriptor taken by the program — still reads as a trace with no end record.
#pragma once

#include "ojx/hardware/agent_output_file.hpp"
#include "ojx/trace_buffer_pool.hpp"
#include "ojx/trace_writer.hpp"

#include <pthread.h>
#include <semaphore.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ojx::hardware {

class trace_file_writer {
public:
    static constexpr std::size_t default_buffers = 16;
    static constexpr std::size_t default_buffer_size = std::size_t{64} << 10;

    trace_file_writer() = default;
    trace_file_writer(const trace_file_writer&) = delete;
    trace_file_writer& operator=(const trace_file_writer&) = delete;
    ~trace_file_writer() { close(); }

    // Creates (or truncates) `path` (open_output_stream's rules: links, mode, lock), writes the trace's file
    // header, allocates the buffers and starts the writer thread (with every signal blocked: the profiler's signals
    // are for the program's threads). One line naming the file and the reason on failure.
    std::optional<std::string> open(const std::string& path, std::size_t buffers = default_buffers,
                                    std::size_t buffer_size = default_buffer_size);
    bool is_open() const noexcept { return started_; }

    // The first block's buffer, and where closed blocks go. Signal-safe sink: wait-free, wakes the thread with
    // sem_post (async-signal-safe).
    std::span<std::byte> first_buffer() noexcept { return pool_->take(); }
    trace_block_sink sink() noexcept { return {this, &exchange}; }

    // For the trace's last records (outside signal handlers): the sink waits for a free buffer rather than
    // refuse one, so that the names and the end record are not lost.
    void wait_for_buffers() noexcept { pool_->wait_for_buffers(); }

    // Waits until every block handed over is in the file, stops the thread and closes the file. One line naming
    // the file, the reason and how many blocks it holds if a write failed or the program took the descriptor
    // (the file then ends early, at a block boundary). Does nothing if not open.
    std::optional<std::string> close();

    std::uint64_t bytes_written() const noexcept { return bytes_written_.load(std::memory_order_relaxed); }
    std::uint64_t blocks_written() const noexcept { return blocks_written_.load(std::memory_order_relaxed); }

private:
    static std::span<std::byte> exchange(void* self, std::span<const std::byte> closed) noexcept;
    static void* run(void* self);
    void write_filled_blocks() noexcept;
    bool write_all(std::span<const std::byte> bytes) noexcept;

    std::string path_;
    std::optional<trace_buffer_pool> pool_;
    owned_descriptor fd_;
    bool regular_file_ = false; // what a failed write left can be cut back to the last whole block
    sem_t wake_{};
    pthread_t thread_{};
    bool started_ = false;
    std::atomic<bool> closing_{false};
    std::atomic<int> write_errno_{0}; // the first failed write's errno (ESTALE: descriptor lost); later blocks are dropped
    std::atomic<std::uint64_t> bytes_written_{0};
    std::atomic<std::uint64_t> blocks_written_{0};
};

} // namespace ojx::hardware
