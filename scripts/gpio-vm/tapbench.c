/* tapbench: tap → relay latency through gatewayd's control socket, inside the
 * gpio-vm guest (make bench-storage; the guest has no python). Built static by
 * scripts/bench-storage.py.
 *
 *   tapbench SOCKET call JSON-PARAMS METHOD   one request; prints the answer line
 *   tapbench SOCKET taps FILE SETTLE_MS       one tap per line of FILE ("UID KEY VALUE":
 *       sim.tap's uid and its "url" or "dump"):
 *       wait until the strike is locked, sim.remove, SETTLE_MS pause (the reader
 *       sees the tag leave), read CLOCK_MONOTONIC, sim.tap, then poll status until
 *       last_unlock_monotonic_ns changes (gatewayd stamps it right after it drove
 *       the relay), then until last_event_durable_monotonic_ns passes it (the
 *       tap's audit row committed; a gatewayd without it: not waited for);
 *       prints "tap N MS [DURABLE_MS]" per tap (DURABLE_MS: relay → durable),
 *       "missed N" for a tap without an unlock within 5 s.
 * The JSON is read by string search: the daemon's answers are its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static FILE *in, *out;
static int next_id;
static char line[1 << 20];

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(double ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (long)(ms / 1000) * 1000) * 1e6)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static void connect_socket(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { perror("tapbench: connect"); exit(1); }
    in = fdopen(fd, "r");
    out = fdopen(dup(fd), "w");
}

/* Sends one request and reads its answer into `line`; exits on a refusal. */
static const char *call(const char *method, const char *params) {
    fprintf(out, "{\"id\":%d,\"method\":\"%s\",\"params\":%s}\n", ++next_id, method, params);
    fflush(out);
    if (!fgets(line, sizeof line, in)) { fprintf(stderr, "tapbench: %s: connection closed\n", method); exit(1); }
    if (!strstr(line, "\"ok\":true") && !strstr(line, "\"ok\": true")) {
        fprintf(stderr, "tapbench: %s refused: %s", method, line);
        exit(1);
    }
    return line;
}

/* The value after "key": in the answer (-1 when absent). */
static long long number(const char *text, const char *key) {
    const char *p = strstr(text, key);
    if (!p) return -1;
    p += strlen(key);
    while (*p == '"' || *p == ':' || *p == ' ') p++;
    return strtoll(p, NULL, 10);
}

static int strike_locked(void) {
    const char *s = call("status", "{}");
    const char *p = strstr(s, "\"strike\"");
    if (!p) return 1;
    p += 8;
    while (*p == ':' || *p == ' ') p++;
    return strncmp(p, "\"locked\"", 8) == 0;
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: tapbench SOCKET call METHOD PARAMS | taps FILE SETTLE_MS\n"); return 2; }
    connect_socket(argv[1]);
    if (strcmp(argv[2], "call") == 0) {
        fputs(call(argv[3], argv[4]), stdout);
        return 0;
    }
    FILE *taps = fopen(argv[3], "r");
    if (!taps) { perror("tapbench: taps file"); return 1; }
    double settle = atof(argv[4]);
    static char uid[64], key[16], value[8192], params[8400];
    int n = 0;
    while (fscanf(taps, "%63s %15s %8191s", uid, key, value) == 3) {
        long long deadline = now_ns() + 5000000000LL;
        while (!strike_locked() && now_ns() < deadline) sleep_ms(5);
        long long before = number(call("status", "{}"), "\"last_unlock_monotonic_ns\"");
        call("sim.remove", "{}");
        sleep_ms(settle);
        snprintf(params, sizeof params, "{\"%s\":\"%s\",\"uid\":\"%s\"}", key, value, uid);
        long long start = now_ns();
        call("sim.tap", params);
        long long unlock = before;
        deadline = now_ns() + 5000000000LL;
        while (now_ns() < deadline) {
            unlock = number(call("status", "{}"), "\"last_unlock_monotonic_ns\"");
            if (unlock != before) break;
            sleep_ms(1);
        }
        /* Then until the tap's events are durable (a gatewayd that stamps it). */
        long long durable = -1;
        while (unlock != before && now_ns() < deadline) {
            durable = number(line, "\"last_event_durable_monotonic_ns\"");
            if (durable < 0 || durable > unlock) break;
            sleep_ms(1);
            call("status", "{}");
        }
        if (unlock == before) printf("missed %d\n", n);
        else if (durable > unlock) printf("tap %d %.2f %.2f\n", n, (unlock - start) / 1e6, (durable - unlock) / 1e6);
        else printf("tap %d %.2f\n", n, (unlock - start) / 1e6);
        fflush(stdout);
        n++;
    }
    return 0;
}
