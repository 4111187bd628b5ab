#include "ojx/hardware/perf_events.hpp"

#include "ojx/hardware/agent_output_file.hpp"

#include <linux/hw_breakpoint.h>
#include <perfmon/pfmlib_perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace ojx::hardware {

namespace {

// The anonymous inode every perf_event descriptor shares (0 until the first open).
std::atomic<dev_t> perf_device{0};
std::atomic<ino_t> perf_inode{0};

} // namespace

int open_perf_event(perf_event_attr& attr, pid_t tid) noexcept {
    attr.size = sizeof(attr);
    const long opened = ::syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (opened < 0) return -errno;
    int fd = static_cast<int>(opened);
    const int floor = high_descriptor_floor();
    if (fd < floor) {
        if (const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, floor); high >= 0) {
            ::close(fd);
            fd = high;
        }
    }
    if (perf_inode.load(std::memory_order_relaxed) == 0) {
        struct stat status {};
        if (::fstat(fd, &status) == 0) {
            perf_device.store(status.st_dev, std::memory_order_relaxed);
            perf_inode.store(status.st_ino, std::memory_order_relaxed);
        }
    }
    return fd;
}

bool is_perf_event_fd(int fd) noexcept {
    struct stat status {};
    const int saved = errno;
    const bool same = fd >= 0 && ::fstat(fd, &status) == 0 && status.st_ino == perf_inode.load(std::memory_order_relaxed) &&
                      status.st_dev == perf_device.load(std::memory_order_relaxed);
    errno = saved;
    return same;
}

bool close_perf_event(int fd) noexcept {
    if (!is_perf_event_fd(fd)) return false;
    ::close(fd);
    return true;
}

void deliver_as_sigtrap(perf_event_attr& attr, std::uint64_t tag) noexcept {
    attr.sigtrap = 1;
    attr.remove_on_exec = 1;
    attr.sig_data = tag;
}

int route_to_thread(int fd, int signal, pid_t tid) noexcept {
    f_owner_ex owner{F_OWNER_TID, tid};
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_ASYNC) != 0) return errno;
    if (::fcntl(fd, F_SETSIG, signal) != 0) return errno;
    if (::fcntl(fd, F_SETOWN_EX, &owner) != 0) return errno;
    return 0;
}

pid_t current_tid() noexcept { return static_cast<pid_t>(::syscall(SYS_gettid)); }

perf_event_attr breakpoint_attr(std::uint64_t where, std::uint8_t length, bool disabled) noexcept {
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_BREAKPOINT;
    attr.bp_type = HW_BREAKPOINT_RW;
    attr.bp_addr = where;
    attr.bp_len = length;
    attr.sample_period = 1;
    attr.wakeup_events = 1;
    attr.disabled = disabled ? 1 : 0;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return attr;
}

namespace {

std::string errno_text(int error) { return std::strerror(error < 0 ? -error : error); }

int read_paranoid() {
    std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
    int value = 2;
    if (!(in >> value)) value = 2;
    return value;
}

// Whether the opened, disabled breakpoint `fd` on `watched` counts a read of it. A breakpoint that opens need not
// work: some hypervisors accept the debug registers and never trap.
bool breakpoints_fire(int fd, const std::uint64_t& watched) {
    if (::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) return false;
    for (int i = 0; i < 4; ++i) static_cast<void>(*static_cast<const volatile std::uint64_t*>(&watched));
    ::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    std::uint64_t count = 0;
    return ::read(fd, &count, sizeof count) == static_cast<ssize_t>(sizeof count) && count > 0;
}

// libpfm4, loaded only when there is a hardware counter to program. Linking it would make every profiled process
// pay for it at start: its event tables carry ≈ 41 000 relocations, ≈ 5 ms of CPU and 290 page faults here, a
// third of the agent's fixed cost, on machines (VMs, containers) where it can name nothing that opens.
struct libpfm {
    decltype(&pfm_initialize) initialize = nullptr;
    decltype(&pfm_get_os_event_encoding) encode = nullptr;
};

std::optional<libpfm> load_libpfm(std::string& reason) {
    void* library = ::dlopen("libpfm.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* error = ::dlerror();
        reason = std::string("libpfm4 is not available (") + (error ? error : "dlopen failed") + ")";
        return std::nullopt;
    }
    libpfm pfm;
    pfm.initialize = reinterpret_cast<decltype(&pfm_initialize)>(::dlsym(library, "pfm_initialize"));
    pfm.encode = reinterpret_cast<decltype(&pfm_get_os_event_encoding)>(::dlsym(library, "pfm_get_os_event_encoding"));
    if (pfm.initialize == nullptr || pfm.encode == nullptr) {
        reason = "libpfm.so.4 lacks pfm_initialize or pfm_get_os_event_encoding";
        return std::nullopt; // the library stays loaded: unloading code that may have run is not worth the risk
    }
    return pfm;
}

// Intel PEBS load events by the names libpfm4 gives them across generations, newest first.
std::optional<precise_event> find_pebs(std::string& reason) {
    const auto pfm = load_libpfm(reason);
    if (!pfm) return std::nullopt;
    if (pfm->initialize() != PFM_SUCCESS) {
        reason = "libpfm4 could not initialise";
        return std::nullopt;
    }
    static const char* const names[] = {"MEM_INST_RETIRED:ALL_LOADS", "MEM_UOPS_RETIRED:ALL_LOADS",
                                        "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=3"};
    for (const char* name : names) {
        perf_event_attr attr{};
        pfm_perf_encode_arg_t arg{};
        arg.attr = &attr;
        arg.size = sizeof(arg);
        if (pfm->encode(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg) != PFM_SUCCESS) continue;
        attr.precise_ip = 2;
        attr.sample_period = 100003;
        attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR | PERF_SAMPLE_TID;
        attr.exclude_kernel = 1;
        attr.disabled = 1;
        const int fd = open_perf_event(attr, 0);
        if (fd >= 0) {
            ::close(fd);
            return precise_event{name, attr};
        }
        reason = std::string("PEBS event ") + name + " exists but does not open: " + errno_text(fd);
        return std::nullopt;
    }
    reason = "no PEBS load event on this CPU (libpfm4 knows none)";
    return std::nullopt;
}

std::optional<precise_event> find_ibs(std::string& reason) {
    std::ifstream in("/sys/bus/event_source/devices/ibs_op/type");
    std::uint32_t type = 0;
    if (!(in >> type)) {
        reason = "no AMD IBS (no ibs_op PMU)";
        return std::nullopt;
    }
    perf_event_attr attr{};
    attr.type = type;
    attr.sample_period = 100000;
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR | PERF_SAMPLE_TID;
    attr.disabled = 1;
    const int fd = open_perf_event(attr, 0);
    if (fd >= 0) {
        ::close(fd);
        return precise_event{"ibs_op", attr};
    }
    reason = "AMD IBS op PMU exists but does not open: " + errno_text(fd);
    return std::nullopt;
}

// A disabled event of `type` and `config` that counts user space only: what the probes below try to open.
perf_event_attr user_event(std::uint32_t type, std::uint64_t config) noexcept {
    perf_event_attr attr{};
    attr.type = type;
    attr.config = config;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    return attr;
}

// Opens `attr` (a copy: opening fills in its size) on the calling thread and closes it again: 0 where it opens,
// else the negative errno.
int opens(perf_event_attr attr) noexcept {
    const int fd = open_perf_event(attr, 0);
    if (fd < 0) return fd;
    ::close(fd);
    return 0;
}

} // namespace

bool timer_keeps_rate(double samples_per_second, std::uint64_t scheduler_tick_ns) noexcept {
    return scheduler_tick_ns > 0 && samples_per_second * static_cast<double>(scheduler_tick_ns) <= 0.8e9;
}

capabilities probe_capabilities(std::size_t max_breakpoint_slots) {
    capabilities caps;
    caps.perf_event_paranoid = read_paranoid();
    if (timespec tick{}; ::clock_getres(CLOCK_MONOTONIC_COARSE, &tick) == 0)
        caps.scheduler_tick_ns = static_cast<std::uint64_t>(tick.tv_sec) * 1000000000ULL +
                                 static_cast<std::uint64_t>(tick.tv_nsec);

    if (const int error = opens(user_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK)); error == 0) {
        caps.perf_events = true;
    } else {
        caps.perf_events_reason = "perf_event_open fails (" + errno_text(error) +
                                  "; kernel.perf_event_paranoid=" + std::to_string(caps.perf_event_paranoid) +
                                  ", or a container/seccomp policy forbids it)";
        caps.hardware_counters_reason = caps.perf_events_reason;
        caps.precise_reason = caps.perf_events_reason;
        caps.breakpoint_reason = caps.perf_events_reason;
        return caps;
    }

    perf_event_attr counter = user_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
    counter.sample_period = 1000000;
    if (const int error = opens(counter); error == 0) {
        caps.hardware_counters = true;
    } else {
        caps.hardware_counters_reason = "no hardware instruction counter: " +
                                        (error == -ENOENT ? std::string("no PMU is exposed to this machine")
                                                          : errno_text(error));
    }

    std::string pebs_reason;
    std::string ibs_reason;
    // PEBS extends the core counters, so without them there is none to find, and libpfm4's initialisation (a scan
    // of every PMU model it knows, ≈ 1.5 ms) is skipped. IBS is a PMU of its own and is looked for regardless.
    if (caps.hardware_counters)
        caps.precise = find_pebs(pebs_reason);
    else
        pebs_reason = "no PEBS (no hardware counters)";
    if (!caps.precise) caps.precise = find_ibs(ibs_reason);
    if (!caps.precise) caps.precise_reason = pebs_reason + "; " + ibs_reason;

    // Debug registers: open breakpoints on distinct addresses until the kernel refuses.
    static std::uint64_t probe_targets[8];
    std::vector<int> fds;
    int last_error = 0;
    for (std::size_t slot = 0; slot < max_breakpoint_slots && slot < 8; ++slot) {
        perf_event_attr attr = breakpoint_attr(reinterpret_cast<std::uint64_t>(&probe_targets[slot]),
                                               HW_BREAKPOINT_LEN_8, true);
        const int fd = open_perf_event(attr, 0);
        if (fd < 0) {
            last_error = fd;
            break;
        }
        fds.push_back(fd);
    }
    caps.breakpoint_slots = fds.size();
    if (fds.empty()) caps.breakpoint_reason = "hardware breakpoints do not open (" + errno_text(last_error) + ")";
    if (!fds.empty() && !breakpoints_fire(fds[0], probe_targets[0])) {
        // Seen on Firecracker VMs: every slot opens, but the hypervisor never delivers the debug trap.
        caps.breakpoint_slots = 0;
        caps.breakpoint_reason = "hardware breakpoints open but never fire on this machine (a watched read "
                                 "counted no trap: the hypervisor does not pass debug-register traps through)";
    }
    if (caps.breakpoint_slots > 0) {
        perf_event_attr attr = breakpoint_attr(reinterpret_cast<std::uint64_t>(&probe_targets[7]),
                                               HW_BREAKPOINT_LEN_8, true);
        caps.breakpoint_modify = ::ioctl(fds[0], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &attr) == 0;
    }
    for (int fd : fds) ::close(fd);

    perf_event_attr clock{};
    clock.type = PERF_TYPE_SOFTWARE;
    clock.config = PERF_COUNT_SW_TASK_CLOCK;
    clock.disabled = 1;
    clock.exclude_kernel = 1;
    clock.sample_period = 1000000;
    deliver_as_sigtrap(clock, 0);
    if (const int fd = open_perf_event(clock, 0); fd >= 0) {
        caps.synchronous_traps = true;
        ::close(fd);
    } else {
        caps.synchronous_traps_reason = "perf_event_open refuses sigtrap (needs Linux 5.13): " + errno_text(fd);
    }
    return caps;
}

} // namespace ojx::hardware
