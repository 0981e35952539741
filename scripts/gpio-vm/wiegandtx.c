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
 *
 *   wiegandtx -b VALUE_FILE OPENED FRAMES D0_PULL D1_PULL BITS [PERIOD_US]
 *
 * The bench (check_wiegand's last bit → relay latency, printed like
 * firebench's): FRAMES times, once the output's sysfs VALUE_FILE shows the
 * locked level (not OPENED) and 300 ms more have passed, the frame BITS is
 * sent; CLOCK_MONOTONIC is read just before the last bit's pull-down (its
 * falling edge is raised inside that write), then VALUE_FILE is read in a loop
 * until it shows OPENED: that time is the frame's latency. Prints "frame N MS"
 * per frame, "missed N" for one without an open within 2 s (a frame a VM stall
 * cut in two), "stuck N" for an output that did not lock again within 10 s,
 * and "latency n=N p50=MS p99=MS max=MS" at the end (nearest rank). Exit 0
 * when nothing was stuck.
 */
#define _GNU_SOURCE
#include <errno.h>
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

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static char read_value(int fd) {
    char c = '?';
    if (pread(fd, &c, 1, 0) != 1) return '?';
    return c;
}

/* Until VALUE_FILE shows (`is` 1) or leaves (`is` 0) `level`, or timeout: the time it took (ns) or -1. */
static long long wait_value(int fd, char level, int is, long timeout_ms, long long from) {
    long long end = from + timeout_ms * 1000000LL;
    for (;;) {
        long long t = now_ns();
        if ((read_value(fd) == level) == is) return t - from;
        if (t > end) return -1;
        usleep(50); /* ~0.1 ms resolution, and the CPU left to gatewayd */
    }
}

/* One bit: its line pulled down (the falling edge) and up again. */
static int bit(char b, const char *d0, const char *d1) {
    const char *line = b == '1' ? d1 : d0;
    return put(line, "pull-down") || put(line, "pull-up");
}

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int bench(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: wiegandtx -b VALUE_FILE OPENED FRAMES D0_PULL D1_PULL BITS [PERIOD_US]\n");
        return 2;
    }
    const char *value = argv[2], *d0 = argv[5], *d1 = argv[6], *bits = argv[7];
    char opened = argv[3][0];
    int frames = atoi(argv[4]);
    long period = argc > 8 ? atol(argv[8]) : 2000;
    size_t count = strlen(bits);
    if (frames <= 0 || frames > 1000 || count == 0 || strspn(bits, "01") != count) return 2;
    int fd = open(value, O_RDONLY);
    if (fd < 0) { perror(value); return 2; }
    long long *ns = calloc((size_t)frames, sizeof *ns);
    int n = 0, stuck = 0;
    for (int i = 1; i <= frames; i++) {
        if (wait_value(fd, opened, 0, 10000, now_ns()) < 0) { printf("stuck %d\n", i); stuck = 1; break; }
        sleep_us(300000);
        for (size_t k = 0; k + 1 < count; k++) {
            if (bit(bits[k], d0, d1)) return 2;
            sleep_us(period);
        }
        /* The clock starts before the last bit's write: gpio-sim raises the edge inside it. */
        long long t0 = now_ns();
        if (bit(bits[count - 1], d0, d1)) return 2;
        long long took = wait_value(fd, opened, 1, 2000, t0);
        if (took < 0) {
            printf("missed %d\n", i);
        } else {
            ns[n++] = took;
            printf("frame %d %.2f\n", i, took / 1e6);
        }
        fflush(stdout);
    }
    qsort(ns, (size_t)n, sizeof *ns, by_value);
    if (n > 0) {
        /* Nearest rank: p99 of 20 is the 20th, the largest. */
        int r50 = (50 * n + 99) / 100, r99 = (99 * n + 99) / 100;
        printf("latency n=%d p50=%.2f p99=%.2f max=%.2f\n", n, ns[r50 - 1] / 1e6, ns[r99 - 1] / 1e6,
            ns[n - 1] / 1e6);
    }
    free(ns);
    return stuck;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-b") == 0) return bench(argc, argv);
    if (argc < 4) {
        fprintf(stderr, "usage: wiegandtx D0_PULL D1_PULL BITS [PERIOD_US]\n");
        return 2;
    }
    long period = argc > 4 ? atol(argv[4]) : 2000;
    for (const char *b = argv[3]; *b; b++) {
        if (*b != '0' && *b != '1') { fprintf(stderr, "wiegandtx: bits are 0 and 1\n"); return 2; }
        if (bit(*b, argv[1], argv[2])) return 1;
        sleep_us(period);
    }
    return 0;
}
