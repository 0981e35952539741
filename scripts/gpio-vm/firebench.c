/* firebench: fire-alarm input edge → released output, inside the gpio-vm
 * guest (fire-checks.sh; the guest has no python). Built static by run.sh.
 *
 *   firebench PULL_FILE VALUE_FILE RELEASED EDGES RESET_CMD...
 *
 * Per edge: CLOCK_MONOTONIC is read, the input's gpio-sim pull file gets
 * "pull-up" (the loop opens: the alarm level of a supervised normally-closed
 * contact with the pull-up; gpio-sim raises the edge inside that write), then
 * the output's sysfs value file is read in a loop until it shows RELEASED
 * ("0" or "1"): the time from before the write is the edge's latency (the
 * debounce included). Then "pull-down" (the loop closes
 * again), RESET_CMD runs (gatewayctl fire reset) until it succeeds, and the
 * output must go back to the other level before the next edge.
 * Prints "edge N MS" per edge, "missed N" for an edge without a release within
 * 2 s, "stuck N" for an output that did not lock again after its reset, and
 * "latency n=N p50=MS p99=MS max=MS" at the end. Exit 0 when no edge missed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static char read_value(int fd) {
    char c = '?';
    if (pread(fd, &c, 1, 0) != 1) return '?';
    return c;
}

/* Until the value is `want` or `timeout_ms` passed; the time it took (ns) or -1. */
static long long wait_start;

static long long wait_value(int fd, char want, long timeout_ms) {
    long long start = now_ns(), end = start + timeout_ms * 1000000LL;
    wait_start = start;
    for (;;) {
        long long t = now_ns();
        if (read_value(fd) == want) return t - start;
        if (t > end) return -1;
        usleep(50); /* ~0.1 ms resolution, and the CPU left to gatewayd */
    }
}

static int run(char **argv) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) { dup2(null, 1); dup2(null, 2); }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: firebench PULL_FILE VALUE_FILE RELEASED EDGES RESET_CMD...\n");
        return 2;
    }
    const char *pull = argv[1], *value = argv[2];
    char released = argv[3][0], locked = released == '0' ? '1' : '0';
    int edges = atoi(argv[4]);
    if (edges <= 0 || edges > 1000) return 2;
    int fd = open(value, O_RDONLY);
    if (fd < 0) { perror(value); return 2; }
    long long *ms = calloc((size_t)edges, sizeof *ms);
    int n = 0, missed = 0;
    for (int i = 1; i <= edges; i++) {
        if (read_value(fd) != locked) { printf("not-locked %d\n", i); missed++; break; }
        /* The clock starts before the write: gpio-sim raises the edge inside it. */
        long long t0 = now_ns();
        if (write_file(pull, "pull-up") != 0) { perror(pull); return 2; }
        long long took = wait_value(fd, released, 2000);
        if (took >= 0) took += wait_start - t0;
        if (took < 0) {
            printf("missed %d\n", i);
            missed++;
        } else {
            ms[n++] = took;
            printf("edge %d %.2f\n", i, took / 1e6);
        }
        fflush(stdout);
        /* Held in alarm a little, then the loop closes and an operator resets. */
        sleep_ms(100);
        if (write_file(pull, "pull-down") != 0) { perror(pull); return 2; }
        int reset = 1;
        for (int tries = 0; tries < 50 && reset != 0; tries++) {
            reset = run(argv + 5);
            if (reset != 0) sleep_ms(100);
        }
        if (reset != 0 || wait_value(fd, locked, 3000) < 0) { printf("stuck %d\n", i); missed++; break; }
        sleep_ms(100);
    }
    qsort(ms, (size_t)n, sizeof *ms, by_value);
    if (n > 0) {
        /* Nearest rank: p99 of 20 is the 20th, the largest. */
        int r50 = (50 * n + 99) / 100, r99 = (99 * n + 99) / 100;
        printf("latency n=%d p50=%.2f p99=%.2f max=%.2f\n", n, ms[r50 - 1] / 1e6, ms[r99 - 1] / 1e6,
            ms[n - 1] / 1e6);
    }
    free(ms);
    return missed == 0 && n == edges ? 0 : 1;
}
