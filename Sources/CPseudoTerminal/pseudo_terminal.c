#define _GNU_SOURCE /* ptsname_r */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "pseudo_terminal.h"

int door_pty_open(char *name, size_t name_len, const char **failed) {
    int fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (fd < 0) { *failed = "posix_openpt"; return -1; }
    if (grantpt(fd) != 0) { *failed = "grantpt"; goto fail; }
    if (unlockpt(fd) != 0) { *failed = "unlockpt"; goto fail; }
    if (ptsname_r(fd, name, name_len) != 0) { *failed = "ptsname_r"; goto fail; }
    return fd;
fail: {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
}
