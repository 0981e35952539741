#ifndef DOORGATEWAY_PSEUDO_TERMINAL_H
#define DOORGATEWAY_PSEUDO_TERMINAL_H
#include <stddef.h>

/* Opens a pseudo-terminal master (posix_openpt(3), grantpt(3), unlockpt(3))
 * and writes the slave's path into `name` (ptsname_r(3)). Returns the master
 * fd, or -1 with errno set and `failed` naming the call. glibc declares these
 * only under _XOPEN_SOURCE, which Swift's Glibc module does not define, and a
 * dlsym lookup does not work in a fully static binary: hence this C file. */
int door_pty_open(char *name, size_t name_len, const char **failed);

#endif
