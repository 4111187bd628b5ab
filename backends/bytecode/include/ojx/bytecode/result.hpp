// The bytecode backend's one error style: every operation that can fail returns result<T>, either its value or
// an error naming the problem and, for operations that read bytes, where in their input it was found. Nothing in
// this library throws for malformed input; the only exceptions are std::bad_alloc and std::bad_variant_access
// from asking a result for the alternative it does not hold (a caller's bug).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ojx::bytecode {

struct error {
    std::string message;               // what is wrong, naming the structure it was found in
    std::optional<std::size_t> offset; // byte offset into the failing operation's input (class file or code array)

    // "message (at offset N)", or the message alone when no offset applies.
    std::string describe() const {
        if (!offset) {
            return message;
        }
        return message + " (at offset " + std::to_string(*offset) + ")";
    }
};

template <class T>
class [[nodiscard]] result {
public:
    result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
    result(bytecode::error failure) : state_(std::in_place_index<1>, std::move(failure)) {}

    bool has_value() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const bytecode::error& error() const { return std::get<1>(state_); }

private:
    std::variant<T, bytecode::error> state_;
};

inline error make_error(std::string message, std::optional<std::size_t> offset = std::nullopt) {
    return error{std::move(message), offset};
}

// For a parser whose steps return false on failure: `fail` records the failure (and returns false, to be returned
// in turn), `take_failure` hands it over once the parse has stopped.
class failure_recorder {
protected:
    bool fail(std::string message, std::size_t offset) {
        failure_ = make_error(std::move(message), offset);
        return false;
    }

    // The recorded failure. Every path that returns false records one first; the fallback keeps a missed path an
    // error value rather than undefined behaviour.
    error take_failure() {
        return failure_ ? std::move(*failure_) : make_error("internal error: a failure without a message");
    }

private:
    std::optional<error> failure_;
};

} // namespace ojx::bytecode
