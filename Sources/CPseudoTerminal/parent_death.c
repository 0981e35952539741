#include "parent_death.h"

#include <sys/prctl.h>
#include <unistd.h>

int door_die_with_parent(pid_t expected_parent, int signal) {
    if (prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0UL, 0UL, 0UL) != 0) return -1;
    return getppid() == expected_parent ? 0 : 1;
}
