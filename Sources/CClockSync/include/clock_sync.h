// The kernel's view of the wall clock, for remote-command freshness
// (docs/formats.md §3: phone commands are refused while the clock is not synchronised).
#ifndef DOORGATEWAY_CLOCK_SYNC_H
#define DOORGATEWAY_CLOCK_SYNC_H

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the kernel says the system clock is synchronised: adjtimex(2)
 * returns TIME_ERROR or sets STA_UNSYNC until NTP (or an RTC) has set it.
 * 1 synchronised, 0 not. Read-only (modes = 0): needs no capability.
 * Swift's Glibc module does not export sys/timex.h. */
int door_clock_synchronised(void);

#ifdef __cplusplus
}
#endif
#endif
