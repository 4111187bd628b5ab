// The one agent of a process, in storage that is never destroyed: the program's threads (a JVM's, or threads that
// outlive exit()) may call into the agent while the process exits, after static destructors have run. Constant-
// initialized, so that a hook reached before the agent is made (an allocation of the dynamic loader's, a load
// before Agent_OnLoad) finds it empty rather than unconstructed.
#pragma once

#include <new>
#include <utility>

namespace ojx::agents {

template <class Agent>
class agent_singleton {
public:
    constexpr agent_singleton() noexcept = default;
    agent_singleton(const agent_singleton&) = delete;
    agent_singleton& operator=(const agent_singleton&) = delete;

    // Makes the agent; once per process.
    template <class... Arguments>
    Agent& emplace(Arguments&&... arguments) {
        instance_ = new (storage_) Agent(std::forward<Arguments>(arguments)...);
        return *instance_;
    }
    // The agent, or null before it is made: the singleton reads as a pointer to it.
    operator Agent*() const noexcept { return instance_; }
    Agent* operator->() const noexcept { return instance_; }

private:
    alignas(Agent) unsigned char storage_[sizeof(Agent)]{};
    Agent* instance_ = nullptr;
};

} // namespace ojx::agents
