// Kernel work an agent's start waits for, done ahead on a thread of its own while the program still starts.
//
// Two operations made the JVM agent's start cost ≈ 25 ms of wall time, almost none of it CPU: growing the
// descriptor table up to high_descriptor_floor() (in a process of several threads the kernel waits for an RCU
// grace period before it frees the old table) and the system's first per-task perf event (the kernel enables
// perf's scheduler hooks and waits for a grace period so that every CPU sees them). Both effects outlast the
// operation: the table never shrinks, and the hooks stay on while any per-task event is open (and for a second
// after the last one closes). Started at Agent_OnLoad, the waits overlap the JVM's own start-up instead of
// delaying the program at VMInit.
#pragma once

namespace ojx::hardware {

// Starts the warm-up on a detached thread that blocks every signal (a program's process-directed signals never
// land on it). Does nothing more where a thread cannot be created: the agent's start then waits as before.
// Call at most once, before the agent opens its own events.
void start_kernel_warm_up() noexcept;

// Closes the warm-up's perf event once the agent's own events are open (they keep the hooks on from then on),
// or makes the warm-up thread close it at once if it has not opened it yet. Safe to call when no warm-up ran,
// and more than once.
void end_kernel_warm_up() noexcept;

} // namespace ojx::hardware
