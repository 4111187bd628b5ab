#include "jvm_attach.hpp"

#include "printable_text.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace ojx::tool {

namespace {

using clock = std::chrono::steady_clock;

// HotSpot reads each argument into a fixed buffer (arg_length_max in attachListener.hpp: 1024 with the NUL).
constexpr std::size_t max_argument_length = 1023;

// The most of a peer's answer read. A JVM answers `load` in a few lines; a peer that goes on is not one.
constexpr std::size_t max_response = std::size_t{1} << 20;

std::string process_name(pid_t pid) { return "process " + std::to_string(pid); }

// What /proc says about the target.
struct target_process {
    pid_t pid = 0;           // in our pid namespace: for kill() and /proc
    pid_t pid_in_jvm = 0;    // in its own namespace: the number in .java_pid<N> and .attach_pid<N>
    uid_t uid = 0;           // effective ids: the JVM trusts files and peers with these
    gid_t gid = 0;
    std::string command;     // comm, for messages
    std::string tmp;         // its /tmp, seen from here
    bool catches_sigquit = false;
    bool zombie = false;

    std::string name() const { return process_name(pid) + (command.empty() ? "" : " (" + printable(command) + ")"); }
    std::string proc(const std::string& entry) const { return "/proc/" + std::to_string(pid) + "/" + entry; }
    std::string socket_path() const { return tmp + "/.java_pid" + std::to_string(pid_in_jvm); }
};

std::optional<std::string> read_target(pid_t pid, target_process& target) {
    target.pid = target.pid_in_jvm = pid;
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    if (!status) return process_name(pid) + " does not exist";
    for (std::string line; std::getline(status, line);) {
        std::istringstream fields(line.substr(line.find(':') + 1));
        std::uint64_t real = 0, effective = 0;
        if (line.starts_with("Name:")) fields >> target.command;
        else if (line.starts_with("State:")) target.zombie = line.find("zombie") != std::string::npos;
        else if (line.starts_with("Uid:") && fields >> real >> effective) target.uid = static_cast<uid_t>(effective);
        else if (line.starts_with("Gid:") && fields >> real >> effective) target.gid = static_cast<gid_t>(effective);
        else if (line.starts_with("NSpid:")) {
            for (pid_t inner = 0; fields >> inner;) target.pid_in_jvm = inner; // the innermost namespace's
        } else if (line.starts_with("SigCgt:")) {
            std::uint64_t caught = 0;
            fields >> std::hex >> caught;
            target.catches_sigquit = (caught >> (SIGQUIT - 1)) & 1;
        }
    }
    if (target.zombie) return target.name() + " has exited";
    if (geteuid() != 0 && geteuid() != target.uid)
        return target.name() + " runs as uid " + std::to_string(target.uid) + " and ojx as uid " +
               std::to_string(geteuid()) + ": run ojx as that user (or as root)";
    return std::nullopt;
}

bool is_socket(const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

// stat(), not access(): access() checks with the real uid, and as root ojx may be acting as the JVM's user.
bool exists(const std::string& path) {
    struct stat info {};
    return stat(path.c_str(), &info) == 0;
}

// Whether libjvm.so is mapped: a process without it is not a JVM, whatever its command line says.
bool has_libjvm(const target_process& target) {
    std::ifstream maps(target.proc("maps"));
    for (std::string line; std::getline(maps, line);)
        if (line.ends_with("/libjvm.so")) return true;
    return false;
}

// As root, act with the JVM's effective ids while talking to it: HotSpot trusts an .attach_pid file only if
// its owner is its own user (or root, since JDK 11), and a peer only with its own uid and gid (or root). The
// same as jattach does; ojx is single-threaded here, so seteuid's process-wide effect is harmless.
class acting_as {
public:
    explicit acting_as(const target_process& target) {
        if (geteuid() != 0 || target.uid == 0) return;
        switched_ = true;
        if (setegid(target.gid) != 0 || seteuid(target.uid) != 0)
            error_ = "cannot act as uid " + std::to_string(target.uid) + " to attach to " + target.name() + ": " +
                     std::strerror(errno);
    }
    ~acting_as() {
        // Back to root first: only root may set the group back.
        if (switched_ && (seteuid(0) != 0 || setegid(saved_gid_) != 0)) std::perror("ojx: restoring root's ids");
    }
    acting_as(const acting_as&) = delete;
    acting_as& operator=(const acting_as&) = delete;
    const std::string& error() const noexcept { return error_; }

private:
    gid_t saved_gid_ = getegid();
    bool switched_ = false;
    std::string error_;
};

// The .attach_pid<N> file that tells the JVM a SIGQUIT means "start the attach listener"; removed when done.
class attach_trigger {
public:
    explicit attach_trigger(const target_process& target) {
        const std::string name = "/.attach_pid" + std::to_string(target.pid_in_jvm);
        for (const std::string& dir : {target.proc("cwd"), target.tmp}) {
            path_ = dir + name;
            const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0660);
            if (fd < 0) continue;
            close(fd);
            // Some file systems give files another owner; the JVM would not trust those.
            struct stat info {};
            if (stat(path_.c_str(), &info) == 0 && info.st_uid == geteuid()) return;
            unlink(path_.c_str());
        }
        path_.clear();
    }
    ~attach_trigger() {
        if (!path_.empty()) unlink(path_.c_str());
    }
    attach_trigger(const attach_trigger&) = delete;
    attach_trigger& operator=(const attach_trigger&) = delete;
    bool ok() const noexcept { return !path_.empty(); }

private:
    std::string path_;
};

std::string seconds(std::chrono::milliseconds duration) {
    std::ostringstream out;
    out << static_cast<double>(duration.count()) / 1000 << " s";
    return out.str();
}

// Makes sure the JVM's attach listener runs: its socket exists, or is made to appear with SIGQUIT.
std::optional<std::string> start_attach_listener(const target_process& target, const attach_timeouts& timeouts) {
    if (is_socket(target.socket_path())) return std::nullopt;
    if (!has_libjvm(target)) return target.name() + " is not a JVM (no libjvm.so in its memory map)";
    if (!target.catches_sigquit)
        return target.name() + " is a JVM that does not handle SIGQUIT (started with -Xrs, or still starting up), "
                               "so its attach listener cannot be started; not signalling it";
    const attach_trigger trigger(target);
    if (!trigger.ok())
        return "cannot create .attach_pid" + std::to_string(target.pid_in_jvm) + " in " + target.proc("cwd") +
               " or " + target.tmp + " to start " + target.name() + "'s attach listener";
    if (kill(target.pid, SIGQUIT) != 0) return "cannot signal " + target.name() + ": " + std::strerror(errno);
    const auto deadline = clock::now() + timeouts.listener;
    auto pause = std::chrono::milliseconds(20);
    while (!is_socket(target.socket_path())) {
        if (clock::now() >= deadline)
            return process_name(target.pid) + " is not a running JVM (no attach listener after " +
                   seconds(timeouts.listener) + "; started with -XX:+DisableAttachMechanism?)";
        std::this_thread::sleep_for(pause);
        pause = std::min(pause + std::chrono::milliseconds(20), std::chrono::milliseconds(200));
    }
    return std::nullopt;
}

std::string trimmed(std::string text) {
    const auto space = [](char c) { return c == '\n' || c == '\r' || c == ' ' || c == '\t'; };
    while (!text.empty() && space(text.back())) text.pop_back();
    std::size_t start = 0;
    while (start < text.size() && space(text[start])) ++start;
    return text.substr(start);
}

// "a\nb\n" → "a; b": the JVM's lines, fit for a one-line message.
std::string one_line(const std::string& text) {
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (!trimmed(line).empty()) out += (out.empty() ? "" : "; ") + trimmed(line);
    return out;
}

// The checks the JDK's own client makes before it connects (jdk.attach, VirtualMachineImpl.checkPermissions):
// the socket is owned by the user we act as (the JVM's), with its group, and no one else may use it. lstat():
// a link put in its place is not the JVM's socket.
std::optional<std::string> check_socket_owner(const target_process& target) {
    const std::string path = target.socket_path();
    struct stat info {};
    if (lstat(path.c_str(), &info) != 0) return "cannot check " + path + ": " + std::strerror(errno);
    if (!S_ISSOCK(info.st_mode)) return path + " is not a socket; not talking to it";
    if (info.st_uid != geteuid())
        return path + " is owned by uid " + std::to_string(info.st_uid) + ", not by " + target.name() +
               "'s user (uid " + std::to_string(geteuid()) + "); not talking to it";
    if (info.st_gid != getegid())
        return path + " belongs to group " + std::to_string(info.st_gid) + ", not " + std::to_string(getegid()) +
               "; not talking to it";
    if ((info.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(info.st_mode & 0777));
        return path + " may be used by others (mode " + mode + "), which a JVM's socket never is; not talking to it";
    }
    return std::nullopt;
}

// Whoever listens on the socket must be the target itself: its process (as our pid namespace numbers it; 0
// where the kernel cannot say) and its user.
std::optional<std::string> check_peer(int fd, const target_process& target) {
    ucred peer{};
    socklen_t length = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0)
        return "cannot tell who listens on " + target.socket_path() + ": " + std::strerror(errno);
    if (peer.uid != target.uid)
        return target.socket_path() + " is served by uid " + std::to_string(peer.uid) + ", not by " + target.name() +
               "'s user (uid " + std::to_string(target.uid) + "); not talking to it";
    if (peer.pid != 0 && peer.pid != target.pid)
        return target.socket_path() + " is served by process " + std::to_string(peer.pid) + ", not by " +
               target.name() + "; not talking to it";
    return std::nullopt;
}

class file_descriptor {
public:
    explicit file_descriptor(int fd) : fd_(fd) {}
    ~file_descriptor() {
        if (fd_ >= 0) close(fd_);
    }
    file_descriptor(const file_descriptor&) = delete;
    file_descriptor& operator=(const file_descriptor&) = delete;
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

// Sends one command and returns everything the JVM answers (it closes the connection when done).
std::optional<std::string> exchange(const target_process& target, const std::string& request,
                                    const attach_timeouts& timeouts, std::string& response) {
    const std::string path = target.socket_path();
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) return "attach socket path too long: " + path;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

    const file_descriptor socket_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (socket_fd.get() < 0) return std::string("socket: ") + std::strerror(errno);
    // connect() and send() on a UNIX socket wait at most the send timeout.
    const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(timeouts.response);
    const timeval limit{static_cast<time_t>(whole.count() / 1'000'000),
                        static_cast<suseconds_t>(whole.count() % 1'000'000)};
    setsockopt(socket_fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (auto problem = check_socket_owner(target)) return problem;
    if (connect(socket_fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
        return "cannot connect to " + target.name() + "'s attach socket " + path + ": " + std::strerror(errno);
    if (auto problem = check_peer(socket_fd.get(), target)) return problem;
    for (std::size_t sent = 0; sent < request.size();) {
        const ssize_t n = send(socket_fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return "cannot send to " + target.name() + ": " + std::strerror(errno);
        sent += static_cast<std::size_t>(n);
    }
    const auto deadline = clock::now() + timeouts.response;
    for (char buffer[4096];;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
        pollfd readable{socket_fd.get(), POLLIN, 0};
        const int ready = left.count() > 0 ? poll(&readable, 1, static_cast<int>(left.count())) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0)
            return target.name() + " did not answer within " + seconds(timeouts.response) +
                   (response.empty() ? "" : " (it said: " + printable(one_line(response)) + ")");
        const ssize_t n = ready > 0 ? read(socket_fd.get(), buffer, sizeof buffer) : -1;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return "cannot read " + target.name() + "'s answer: " + std::strerror(errno);
        if (n == 0) return std::nullopt;
        response.append(buffer, static_cast<std::size_t>(n));
        if (response.size() > max_response)
            return target.name() + " answered more than " + std::to_string(max_response >> 20) +
                   " MiB, which no JVM does; stopped reading";
    }
}

std::optional<int> leading_integer(const std::string& line) {
    try {
        std::size_t used = 0;
        const int value = std::stoi(line, &used);
        return trimmed(line.substr(used)).empty() ? std::optional<int>(value) : std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace

agent_load_result parse_load_response(pid_t pid, const std::string& response) {
    agent_load_result result;
    std::istringstream lines(response);
    std::string status_line, code_line;
    std::getline(lines, status_line);
    const std::optional<int> status = leading_integer(status_line);
    if (!status) {
        result.error = process_name(pid) + " gave an answer ojx does not understand: '" + printable(one_line(response)) + "'";
        return result;
    }
    std::ostringstream rest;
    rest << lines.rdbuf();
    if (*status != 0) {
        const std::string said = printable(one_line(rest.str()));
        result.error = "agent load failed in " + process_name(pid) + " (attach status " + std::to_string(*status) +
                       ")" + (said.empty() ? "" : ": " + said);
        return result;
    }
    std::istringstream after(rest.str());
    std::getline(after, code_line);
    const std::string_view prefix = "return code: ";
    const std::string code_text = code_line.starts_with(prefix) ? code_line.substr(prefix.size()) : code_line;
    const std::optional<int> code = leading_integer(code_text);
    if (!code) {
        result.error = process_name(pid) + " did not say what the agent returned: '" + printable(one_line(rest.str())) + "'";
        return result;
    }
    result.agent_return_code = *code;
    std::ostringstream text;
    text << after.rdbuf();
    result.jvm_text = printable(one_line(text.str()));
    return result;
}

agent_load_result load_agent(pid_t pid, const std::string& agent_path, const std::string& options,
                             const attach_timeouts& timeouts) {
    agent_load_result failed;
    if (agent_path.size() > max_argument_length || options.size() > max_argument_length) {
        failed.error = "the agent's path and options must each be at most " + std::to_string(max_argument_length) +
                       " bytes (the attach protocol's limit)";
        return failed;
    }
    target_process target;
    if (auto error = read_target(pid, target)) {
        failed.error = *error;
        return failed;
    }
    const acting_as identity(target);
    if (!identity.error().empty()) {
        failed.error = identity.error();
        return failed;
    }
    // The JVM's /tmp as it sees it (in a container, not ours); ours when its root cannot be looked into.
    target.tmp = target.proc("root") + "/tmp";
    if (!exists(target.tmp)) target.tmp = "/tmp";
    // The JVM opens the agent by path in its own file system: in a container ours may not be there.
    if (exists(target.proc("root") + "/") && !exists(target.proc("root") + agent_path)) {
        failed.error = agent_path + " is not visible to " + target.name() +
                       " (another file system: a container?); copy libojx.so there and give its path with --agent";
        return failed;
    }
    if (auto error = start_attach_listener(target, timeouts)) {
        failed.error = *error;
        return failed;
    }
    std::string request = "1";
    for (const std::string& part : {std::string("load"), agent_path, std::string("true"), options})
        request += std::string(1, '\0') + part;
    request += '\0';
    std::string response;
    if (auto error = exchange(target, request, timeouts, response)) {
        failed.error = *error;
        return failed;
    }
    return parse_load_response(pid, response);
}

} // namespace ojx::tool
