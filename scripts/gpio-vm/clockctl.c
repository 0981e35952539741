/* clockctl: the guest's wall clock for the clock-jump fault scenario
 * (scripts/faults/clockjump.py). Built static by scripts/gpio-vm/run.sh and
 * run only inside the gpio-vm guest: it changes CLOCK_REALTIME.
 *
 *   clockctl show          "<unix s> <synchronised 0|1> <status hex> <maxerror us>"
 *   clockctl set SECONDS   clock_settime(CLOCK_REALTIME) to SECONDS (Unix)
 *   clockctl shift DELTA   CLOCK_REALTIME += DELTA seconds (may be negative)
 *   clockctl sync          what an NTP daemon does once it has locked:
 *                          adjtimex ADJ_STATUS (STA_UNSYNC cleared) and
 *                          ADJ_MAXERROR 0 (else the kernel sets STA_UNSYNC
 *                          again once maxerror passes 16 s)
 *
 * Setting the clock makes the kernel clear its NTP state (ntp_clear():
 * STA_UNSYNC set, maxerror at its limit), as on a real door when something
 * steps the clock: gatewayd then sees an unsynchronised clock until `sync`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>

static int show(void) {
    struct timex tx;
    memset(&tx, 0, sizeof tx);
    int state = adjtimex(&tx);
    if (state < 0) { perror("adjtimex"); return 1; }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int synced = state != TIME_ERROR && !(tx.status & STA_UNSYNC);
    printf("%lld %d 0x%x %ld\n", (long long)ts.tv_sec, synced, (unsigned)tx.status, (long)tx.maxerror);
    return 0;
}

static int set(long long seconds, long nsec) {
    struct timespec ts = {.tv_sec = (time_t)seconds, .tv_nsec = nsec};
    if (clock_settime(CLOCK_REALTIME, &ts) != 0) { perror("clock_settime"); return 1; }
    return show();
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "show") == 0) return show();
    if (argc == 3 && strcmp(argv[1], "set") == 0) return set(strtoll(argv[2], NULL, 10), 0);
    if (argc == 3 && strcmp(argv[1], "shift") == 0) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        return set((long long)now.tv_sec + strtoll(argv[2], NULL, 10), now.tv_nsec);
    }
    if (argc == 2 && strcmp(argv[1], "sync") == 0) {
        struct timex tx;
        memset(&tx, 0, sizeof tx);
        tx.modes = ADJ_STATUS | ADJ_MAXERROR | ADJ_ESTERROR;
        tx.status = 0;
        tx.maxerror = 0;
        tx.esterror = 0;
        if (adjtimex(&tx) < 0) { perror("adjtimex"); return 1; }
        return show();
    }
    fprintf(stderr, "usage: clockctl show | set SECONDS | shift DELTA | sync\n");
    return 2;
}
