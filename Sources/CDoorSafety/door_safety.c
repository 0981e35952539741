#define _GNU_SOURCE
#include "door_safety.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct guarded_line {
    _Atomic(struct gpiod_line *) line;
    atomic_int locked_value;
};

static struct guarded_line table[DOOR_SAFETY_MAX_LINES];
static atomic_int installed;

// Registration runs on one thread at a time (the board's init and deinit);
// only the handler reads concurrently.
int door_safety_register(struct gpiod_line *line, int locked_value)
{
    for (int i = 0; i < DOOR_SAFETY_MAX_LINES; i++) {
        struct gpiod_line *expected = NULL;
        // Publish the value before the pointer so the handler never pairs a
        // line with a stale value.
        if (atomic_load(&table[i].line) == NULL) {
            atomic_store(&table[i].locked_value, locked_value);
            if (atomic_compare_exchange_strong(&table[i].line, &expected, line))
                return 0;
        }
    }
    return -1;
}

int door_safety_set_value(struct gpiod_line *line, int value)
{
    for (int i = 0; i < DOOR_SAFETY_MAX_LINES; i++) {
        if (atomic_load(&table[i].line) == line) {
            atomic_store(&table[i].locked_value, value);
            return 0;
        }
    }
    return -1;
}

void door_safety_unregister(struct gpiod_line *line)
{
    for (int i = 0; i < DOOR_SAFETY_MAX_LINES; i++) {
        struct gpiod_line *expected = line;
        atomic_compare_exchange_strong(&table[i].line, &expected, NULL);
    }
}

int door_safety_lock_all(void)
{
    int failed = 0;
    int saved_errno = errno;
    for (int i = 0; i < DOOR_SAFETY_MAX_LINES; i++) {
        struct gpiod_line *line = atomic_load(&table[i].line);
        if (line == NULL)
            continue;
        // Async-signal-safe: in libgpiod 1.6 gpiod_line_set_value builds a
        // one-line bulk on the stack, checks the line is requested, memsets a
        // struct gpiohandle_data and issues one
        // ioctl(GPIOHANDLE_SET_LINE_VALUES_IOCTL) on the line's handle fd.
        // No allocation, no locks, no stdio.
        if (gpiod_line_set_value(line, atomic_load(&table[i].locked_value)) != 0)
            failed++;
    }
    errno = saved_errno;
    return failed;
}

static void on_fatal_signal(int sig)
{
    door_safety_lock_all();
    // Die with the original signal so the exit status and core dump stay
    // right: restore the default action and re-raise. The signal is blocked
    // while this handler runs, so it is delivered as soon as we return (for a
    // fault, the faulting instruction runs again under SIG_DFL).
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int fatal_signals[] = { SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGTRAP };

int door_safety_altstack_for_current_thread(void)
{
    // 64 KiB, well above SIGSTKSZ; allocated once per thread and kept for the
    // thread's life (the kernel uses it only while a handler runs).
    enum { size = 64 * 1024 };
    stack_t current;
    if (sigaltstack(NULL, &current) == 0 && !(current.ss_flags & SS_DISABLE))
        return 0;
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = malloc(size);
    if (ss.ss_sp == NULL)
        return ENOMEM;
    ss.ss_size = size;
    if (sigaltstack(&ss, NULL) != 0) {
        int e = errno;
        free(ss.ss_sp);
        return e;
    }
    return 0;
}

int door_safety_install(void)
{
    int e = door_safety_altstack_for_current_thread();
    if (e != 0)
        return e;
    if (atomic_exchange(&installed, 1))
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        if (sigaction(fatal_signals[i], &sa, NULL) != 0) {
            atomic_store(&installed, 0);
            return errno;
        }
    }
    return 0;
}
