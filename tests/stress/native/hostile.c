// Programs that use the process in ways a profiler living inside it can break: they close descriptors they did not
// open, own signals the profiler may also want, run signal handlers on a small alternate stack, block every signal
// in a thread, change directory, leave by _exit or abort, and end by a SIGTERM they raise themselves. Each prints what it observed; the stress driver runs
// it with and without the agent and requires the same output, files and exit status.
//
// usage: hostile MODE [ARG]   (modes: closefds FILE, sigtrap, sigio, altstack, rtmin2, blocked, chdir DIR,
//                              exit_underscore, abort, raise_term)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// Allocates, fills and reads objects of 1-4 KiB (the sizes the native agent tracks), so that the agent has objects,
// samples and watchpoints while the program does what it does. Deterministic: returns a checksum.
static uint64_t churn(uint64_t seed, long iterations) {
    enum { live = 128 };
    unsigned char* ring[live] = {0};
    size_t sizes[live] = {0};
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1, sum = 0;
    for (long i = 0; i < iterations; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        unsigned slot = (unsigned)(state >> 40) % live;
        if (ring[slot] != NULL) {
            for (size_t k = 0; k < sizes[slot]; k += 32) sum = sum * 31 + ring[slot][k];
            free(ring[slot]);
        }
        sizes[slot] = 1024 + (size_t)(state >> 20) % 3073;
        ring[slot] = malloc(sizes[slot]);
        if (ring[slot] == NULL) abort();
        memset(ring[slot], (int)(i % 5), sizes[slot]);
    }
    for (unsigned s = 0; s < live; s++) free(ring[s]);
    return sum;
}

static const long default_work = 800000;

// ---- closefds: a daemon's start. Every inherited descriptor above stderr is closed, then the program opens its
// own output file and writes it through stdio; the last buffered part is flushed by exit(). Any descriptor the
// agent opened before main is now closed, and its number may be the program's file.
static int closefds(const char* path) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
        struct rlimit files;
        getrlimit(RLIMIT_NOFILE, &files);
        for (int fd = 3; fd < (int)files.rlim_cur && fd < 65536; fd++) close(fd);
    }
    FILE* out = fopen(path, "w");
    if (out == NULL) {
        perror(path);
        return 1;
    }
    for (int round = 0; round < 40; round++) {
        uint64_t sum = churn((uint64_t)round, default_work / 40);
        for (int line = 0; line < 20; line++) fprintf(out, "round %d line %d checksum %016llx\n", round, line,
                                                      (unsigned long long)(sum + (uint64_t)line));
    }
    // A second file written with plain write(2) and closed: its descriptor number is reused from the closed ones.
    char second[4096];
    snprintf(second, sizeof second, "%s.raw", path);
    int fd = open(second, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(second);
        return 1;
    }
    for (int i = 0; i < 100; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "raw line %d\n", i);
        if (write(fd, line, (size_t)n) != n) return 1;
    }
    close(fd);
    printf("closefds: wrote %s and %s.raw\n", "output", "output");
    return 0; // no fclose: exit() flushes the rest of `out`, after every destructor and atexit handler ran
}

// ---- sigtrap: the program's own SIGTRAP handler, for raise(SIGTRAP) (SI_TKILL, or SI_USER when a full queue
// dropped its details) and int3 (SI_KERNEL). Every trap must reach it, and only those: a single step (TRAP_TRACE)
// or a hardware breakpoint (TRAP_HWBKPT) is not the program's.
static volatile sig_atomic_t traps_seen, traps_foreign;
static void on_trap(int sig, siginfo_t* info, void* context) {
    (void)sig;
    (void)context;
    if (info->si_code == SI_TKILL || info->si_code == SI_USER || info->si_code == SI_KERNEL) traps_seen = traps_seen + 1;
    else traps_foreign = traps_foreign + 1;
}
static int sigtrap(void) {
    struct sigaction action = {0};
    action.sa_sigaction = on_trap;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &action, NULL);
    uint64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        sum += churn((uint64_t)i, default_work / 8);
        raise(SIGTRAP);
        sum += churn((uint64_t)i + 10, default_work / 8);
        __asm__ volatile("int3"); // the handler returns after the instruction
    }
    printf("sigtrap: 8 traps made, %d reached the handler as the program's, %d foreign; checksum %016llx\n",
           (int)traps_seen, (int)traps_foreign, (unsigned long long)sum);
    return 0;
}

// ---- sigio: the program's own SIGIO handler (the signal the kernel sends when a real-time signal queue
// overflows). Only the program's raise() calls may reach it: SI_TKILL, or SI_USER with no sender when the user's
// queue was full (the kernel then delivers the signal without its details). The kernel's overflow SIGIO is
// SI_KERNEL, and a descriptor's signal has a positive POLL_* code.
static volatile sig_atomic_t io_own, io_foreign;
static void on_io(int sig, siginfo_t* info, void* context) {
    (void)sig;
    (void)context;
    if ((info->si_code == SI_TKILL && info->si_pid == getpid()) || (info->si_code == SI_USER && info->si_pid == 0))
        io_own = io_own + 1;
    else
        io_foreign = io_foreign + 1;
}
static int sigio(void) {
    struct sigaction action = {0};
    action.sa_sigaction = on_io;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGIO, &action, NULL);
    uint64_t sum = 0;
    for (int i = 0; i < 5; i++) {
        sum += churn((uint64_t)i, default_work / 5);
        raise(SIGIO);
    }
    printf("sigio: 5 raised, %d own received, %d foreign; checksum %016llx\n", (int)io_own, (int)io_foreign,
           (unsigned long long)sum);
    return 0;
}

// ---- altstack: handlers on the classic 8 KiB alternate stack (SIGSTKSZ before glibc 2.34), with a page that
// cannot be touched below it, in two threads. A handler that needs more stack faults on that page and the program
// dies; a handler that fits leaves the program's own handler working.
enum { small_stack = 8192 };
static volatile sig_atomic_t usr1_seen;
static void on_usr1(int sig) {
    (void)sig;
    usr1_seen = usr1_seen + 1;
}
static void use_small_altstack(void) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char* region = mmap(NULL, (size_t)page + small_stack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                 -1, 0);
    if (region == MAP_FAILED || mprotect(region, (size_t)page, PROT_NONE) != 0) abort();
    stack_t stack = {.ss_sp = region + page, .ss_size = small_stack, .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) abort();
}
static void* altstack_thread(void* argument) {
    use_small_altstack();
    *(uint64_t*)argument = churn(99, default_work);
    return NULL;
}
static int altstack(void) {
    use_small_altstack();
    struct sigaction action = {0};
    action.sa_handler = on_usr1;
    action.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGUSR1, &action, NULL);
    uint64_t other = 0, sum = 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, altstack_thread, &other) != 0) return 3;
    for (int i = 0; i < 10; i++) {
        sum += churn((uint64_t)i, default_work / 10);
        raise(SIGUSR1);
    }
    pthread_join(thread, NULL);
    printf("altstack: 10 SIGUSR1 raised, %d handled; checksums %016llx %016llx\n", (int)usr1_seen,
           (unsigned long long)sum, (unsigned long long)other);
    return 0;
}

// ---- rtmin2: after start, the program takes SIGRTMIN+2 for itself and sigqueue()s it to itself with values. It
// must receive exactly its own signals. A send refused by a full queue (EAGAIN) is retried for at most 20 ms and
// then not counted, so the output does not depend on how full the user's queue is (with no room at all, nothing
// is sent, with or without the agent).
static volatile sig_atomic_t rt_own, rt_foreign;
static volatile sig_atomic_t rt_next_value;
static void on_rt(int sig, siginfo_t* info, void* context) {
    (void)sig;
    (void)context;
    if (info->si_code == SI_QUEUE && info->si_pid == getpid() && info->si_value.sival_int == rt_next_value) {
        rt_own = rt_own + 1;
        rt_next_value = rt_next_value + 1;
    } else {
        rt_foreign = rt_foreign + 1;
    }
}
static int rtmin2(void) {
    uint64_t sum = churn(1, default_work / 4); // the agent has started and runs before the program takes the signal
    struct sigaction action = {0};
    action.sa_sigaction = on_rt;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN + 2, &action, NULL);
    int sent = 0;
    for (int i = 0; i < 50; i++) {
        sum += churn((uint64_t)i, default_work / 100);
        union sigval value = {.sival_int = sent};
        for (int attempt = 0; attempt < 20; attempt++) {
            if (sigqueue(getpid(), SIGRTMIN + 2, value) == 0) {
                sent++;
                break;
            }
            if (errno != EAGAIN) abort();
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
    // A signal sent to the process by itself is delivered before sigqueue returns when it is not blocked; wait a
    // little in case another thread of the agent's took it.
    for (int i = 0; i < 100 && rt_own + rt_foreign < sent; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    printf("rtmin2: %s of its own signals received in order, %d foreign; checksum %016llx\n",
           rt_own == sent ? "all" : "NOT all", (int)rt_foreign, (unsigned long long)sum);
    return 0;
}

// ---- blocked: a worker thread blocks every signal and computes; so does the main thread, unblocked.
static void* blocked_thread(void* argument) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    *(uint64_t*)argument = churn(7, default_work * 2);
    return NULL;
}
static int blocked(void) {
    uint64_t other = 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, blocked_thread, &other) != 0) return 3;
    uint64_t sum = churn(8, default_work);
    pthread_join(thread, NULL);
    printf("blocked: checksums %016llx %016llx\n", (unsigned long long)sum, (unsigned long long)other);
    return 0;
}

// ---- chdir: the program moves to DIR while it runs and writes a file there by a relative name. A relative
// profile path given at start must still mean the directory the program started in.
static int change_directory(const char* dir) {
    uint64_t sum = churn(2, default_work / 2);
    if (chdir(dir) != 0) {
        perror(dir);
        return 1;
    }
    sum += churn(3, default_work / 2);
    FILE* out = fopen("after-chdir.txt", "w");
    if (out == NULL) return 1;
    fprintf(out, "written after chdir, checksum %016llx\n", (unsigned long long)sum);
    fclose(out);
    printf("chdir: done\n");
    return 0;
}

// ---- exit_underscore, abort: leave without exit()'s destructors. The exit status must be the program's.
static int leave(int by_abort) {
    uint64_t sum = churn(4, default_work);
    char line[128];
    int n = snprintf(line, sizeof line, "%s: checksum %016llx\n", by_abort ? "abort" : "_exit",
                     (unsigned long long)sum);
    if (write(1, line, (size_t)n) != n) return 1;
    if (by_abort) abort();
    _exit(3);
}

static void signal_default(int number) { signal(number, SIG_DFL); }

// ---- raise_term: a program's SIGTERM handler that cleans up, puts the default back and raises it again, reached
// by a raise of its own: the process must end by SIGTERM at that raise, never run on past it (the native agent's
// catcher stands in for the default once the handler puts it back).
static void clean_up_and_reraise(int signal) {
    static const char words[] = "raise_term: cleaning up\n";
    if (write(1, words, sizeof words - 1) < 0) _exit(8);
    signal_default(signal);
    raise(signal);
}

static int raise_term(void) {
    uint64_t sum = churn(5, default_work);
    printf("raise_term: checksum %016llx\n", (unsigned long long)sum);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = clean_up_and_reraise;
    if (sigaction(SIGTERM, &action, NULL) != 0) return 1;
    raise(SIGTERM);
    static const char words[] = "raise_term: raise returned\n";
    if (write(1, words, sizeof words - 1) < 0) _exit(8);
    _exit(9);
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char* mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "closefds") == 0 && argc > 2) return closefds(argv[2]);
    if (strcmp(mode, "sigtrap") == 0) return sigtrap();
    if (strcmp(mode, "sigio") == 0) return sigio();
    if (strcmp(mode, "altstack") == 0) return altstack();
    if (strcmp(mode, "rtmin2") == 0) return rtmin2();
    if (strcmp(mode, "blocked") == 0) return blocked();
    if (strcmp(mode, "chdir") == 0 && argc > 2) return change_directory(argv[2]);
    if (strcmp(mode, "exit_underscore") == 0) return leave(0);
    if (strcmp(mode, "abort") == 0) return leave(1);
    if (strcmp(mode, "raise_term") == 0) return raise_term();
    fprintf(stderr, "usage: hostile MODE [ARG]\n");
    return 2;
}
