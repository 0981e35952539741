#ifndef DOORGATEWAY_PARENT_DEATH_H
#define DOORGATEWAY_PARENT_DEATH_H
#include <sys/types.h>

/* Asks the kernel to send `signal` to this process when its parent dies
 * (prctl(2) PR_SET_PDEATHSIG; prctl is variadic, so Swift cannot call it),
 * then closes the race with a parent that died before the call: returns 0
 * when the parent is still `expected_parent`, 1 when it is already gone
 * (getppid(2) changed: we were re-parented), -1 with errno when prctl fails.
 * The signal comes when the parent *thread* that spawned us exits; gatewayd
 * spawns pn532-sim from its main thread, which lives as long as the process. */
int door_die_with_parent(pid_t expected_parent, int signal);

#endif
