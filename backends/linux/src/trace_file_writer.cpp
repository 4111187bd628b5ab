#include "ojx/hardware/trace_file_writer.hpp"

#include "ojx/trace_format.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ojx::hardware {

std::optional<std::string> trace_file_writer::open(const std::string& path, std::size_t buffers,
                                                   std::size_t buffer_size) {
    if (started_) return "the trace is already being written to " + path_;
    path_ = path;
    output_target target;
    if (auto error = open_output_stream(path, fd_, target)) return "cannot write the trace to " + path + ": " + *error;
    regular_file_ = !target.write_in_place;
    const auto header = trace_file_header();
    if (!write_all(header)) {
        const int error = write_errno_.load();
        fd_.close();
        if (regular_file_) ::unlink(target.path.c_str()); // it holds nothing of this run, and not an earlier trace
        write_errno_.store(0);
        return "cannot write the trace to " + path + ": " + std::strerror(error);
    }
    pool_.emplace(buffers, buffer_size);
    sem_init(&wake_, 0, 0);
    // The thread inherits this mask: no signal of the program's (or of ours) is ever delivered to it.
    sigset_t all{}, previous{};
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const int error = pthread_create(&thread_, nullptr, &run, this);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (error != 0) {
        sem_destroy(&wake_);
        pool_.reset();
        fd_.close();
        return "cannot start the trace's writer thread: " + std::string(std::strerror(error));
    }
    started_ = true;
    return std::nullopt;
}

// Signal-safe: the pool's exchange is wait-free (until wait_for_buffers), sem_post is async-signal-safe.
std::span<std::byte> trace_file_writer::exchange(void* raw, std::span<const std::byte> closed) noexcept {
    auto& self = *static_cast<trace_file_writer*>(raw);
    if (!closed.empty()) {
        self.pool_->hand_over(closed);
        sem_post(&self.wake_); // before take(), which may wait (wait_for_buffers) for this very block's buffer
    }
    return self.pool_->take();
}

void* trace_file_writer::run(void* raw) {
    auto& self = *static_cast<trace_file_writer*>(raw);
    for (;;) {
        while (sem_wait(&self.wake_) != 0 && errno == EINTR) {
        }
        self.write_filled_blocks();
        if (self.closing_.load(std::memory_order_acquire)) {
            self.write_filled_blocks(); // anything handed over before close() set the flag
            return nullptr;
        }
    }
}

void trace_file_writer::write_filled_blocks() noexcept {
    while (const auto block = pool_->next_filled()) {
        // After a failed write the file cannot be continued (a block cut short is not a trace); the buffers
        // still come back, so that the filler keeps running and counts what it loses.
        if (write_errno_.load(std::memory_order_relaxed) == 0 && write_all(block->bytes))
            blocks_written_.fetch_add(1, std::memory_order_relaxed);
        pool_->give_back(block->buffer);
    }
}

bool trace_file_writer::write_all(std::span<const std::byte> bytes) noexcept {
    const int error = fd_.write_all(bytes);
    if (error == 0) {
        bytes_written_.fetch_add(bytes.size(), std::memory_order_relaxed);
        return true;
    }
    // Whatever part of this block reached the file is cut off again, so that the file ends at a block boundary
    // (never where the descriptor is no longer ours: nothing reached the file then).
    if (regular_file_ && fd_.still_ours())
        (void)::ftruncate(fd_.number(), static_cast<off_t>(bytes_written_.load(std::memory_order_relaxed)));
    write_errno_.store(error, std::memory_order_relaxed);
    return false;
}

std::optional<std::string> trace_file_writer::close() {
    if (!started_) return std::nullopt;
    started_ = false;
    closing_.store(true, std::memory_order_release);
    sem_post(&wake_);
    pthread_join(thread_, nullptr);
    sem_destroy(&wake_);
    int error = write_errno_.load();
    if (const int closed = fd_.close(); error == 0) error = closed;
    if (error == 0) return std::nullopt;
    const std::string holds = "; it ends after " + std::to_string(blocks_written()) + " blocks (" +
                              std::to_string(bytes_written()) + " bytes)";
    if (error == ESTALE) return "the program closed the descriptor of the trace " + path_ + holds;
    return "could not write the whole trace to " + path_ + ": " + std::strerror(error) + holds;
}

} // namespace ojx::hardware
