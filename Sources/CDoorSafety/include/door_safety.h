// Relay safety on fatal signals: an async-signal-safe handler that drives
// every registered relay output to its locked level, then lets the process
// die with the original signal (docs/design.md "Vocabulary": every exit path drives
// outputs to their locked level).
#ifndef DOORGATEWAY_DOOR_SAFETY_H
#define DOORGATEWAY_DOOR_SAFETY_H

#include <gpiod.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Capacity of the static table of guarded output lines.
#define DOOR_SAFETY_MAX_LINES 32

/// Remember `line` (a requested output) and the value that locks it: the
/// logical value handed to gpiod_line_set_value, which the kernel inverts for
/// an active-low request. Returns 0, or -1 when the table is full.
int door_safety_register(struct gpiod_line *line, int locked_value);

/// Change the value the handler drives `line` to (a fire alarm's released
/// level while it holds, the locked level again after its reset). Returns 0,
/// or -1 when the line is not registered.
int door_safety_set_value(struct gpiod_line *line, int value);

/// Forget `line`. Call before the line is released or its chip closed.
void door_safety_unregister(struct gpiod_line *line);

/// Drive every registered line to its locked value (what the handler does).
/// Returns how many lines failed to be set.
int door_safety_lock_all(void);

/// Install the handler with sigaction for SIGABRT, SIGSEGV, SIGBUS, SIGILL
/// and SIGTRAP on an alternate signal stack (sigaltstack) for the calling
/// thread, so a stack overflow on that thread still runs it. Idempotent.
/// Returns 0, or the errno of the failing call.
int door_safety_install(void);

/// Give the calling thread its own alternate signal stack (sigaltstack is per
/// thread). Returns 0 or an errno.
int door_safety_altstack_for_current_thread(void);

#ifdef __cplusplus
}
#endif
#endif

