/* wiegandtx: a Wiegand reader's output on two gpio-sim lines, for the
 * gpio-vm guest's check_wiegand (gateway-checks.sh). Built static by
 * scripts/gpio-vm/run.sh.
 *
 *   wiegandtx D0_PULL D1_PULL BITS [PERIOD_US]
 *
 * For each bit of BITS ('0' on D0, '1' on D1) the line's gpio-sim `pull` is
 * set to pull-down then back to pull-up (a low pulse, the edges the reader's
 * open-collector output makes), one bit every PERIOD_US (default 2000: the
 * 2 ms between bits most readers use). A shell loop did the same, but under
 * TCG on a loaded host its writes now and then took longer than the door's
 * frame gap and the frame arrived in pieces.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) { perror(path); return -1; }
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    if (n != (ssize_t)strlen(text)) { perror(path); return -1; }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: wiegandtx D0_PULL D1_PULL BITS [PERIOD_US]\n");
        return 2;
    }
    long period = argc > 4 ? atol(argv[4]) : 2000;
    for (const char *b = argv[3]; *b; b++) {
        if (*b != '0' && *b != '1') { fprintf(stderr, "wiegandtx: bits are 0 and 1\n"); return 2; }
        const char *line = *b == '1' ? argv[2] : argv[1];
        if (put(line, "pull-down") || put(line, "pull-up")) return 1;
        struct timespec ts = {period / 1000000, (period % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
