// Ending by SIGTERM, SIGINT or SIGHUP with a profile. Where one of these is at its default action, ojx's catcher
// stands in for it: a signal from outside the process (kill, timeout, a terminal's Ctrl-C or hang-up, a container
// being stopped) wakes a thread of the agent's, which has the profile written and then ends the process by that
// same signal with the default action, so that its wait status is exactly what it would have been. The program
// never sees the difference: the interposed sigaction reports the default while the catcher is in place, and a
// handler or SIG_IGN the program installs replaces the catcher.
#pragma once

#include <signal.h>

#include <optional>
#include <string>

namespace ojx::preload {

// Starts the agent's thread and puts the catcher in place of each of SIGTERM, SIGINT and SIGHUP that is at its
// default action. `write_profile` runs on a thread of the agent's, at most once, when a caught signal arrives; it
// must tolerate the program running (and calling exit) meanwhile. Returns an error message, and then catches
// nothing.
std::optional<std::string> catch_exit_signals(void (*write_profile)());

// The interposed sigaction (and signal) for SIGTERM, SIGINT and SIGHUP once catching started: true when the call
// was handled here, with its return value in `result` (errno set as sigaction sets it); false for any other
// signal, which the caller passes on. Async-signal-safe, as sigaction is.
bool exit_signal_action(int signal, const struct sigaction* action, struct sigaction* previous, int& result) noexcept;

// At exit, after the profile was written: where a caught signal is ending the process, waits for it to (bounded),
// so that a program that went on to exit() meanwhile does not end with a status the signal would have overtaken.
void await_exit_signal() noexcept;

} // namespace ojx::preload
