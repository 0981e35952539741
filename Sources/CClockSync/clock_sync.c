#include "clock_sync.h"

#include <sys/timex.h>

int door_clock_synchronised(void) {
    struct timex t = {0};
    int state = adjtimex(&t);
    return state != TIME_ERROR && state != -1 && (t.status & STA_UNSYNC) == 0;
}
