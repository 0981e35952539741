// glibc's malloc arenas for gatewayd (MallocArenas.swift): Swift's Glibc module does not
// export malloc.h's mallopt and M_ARENA_MAX.
#ifndef DOORGATEWAY_MALLOC_ARENAS_H
#define DOORGATEWAY_MALLOC_ARENAS_H

#ifdef __cplusplus
extern "C" {
#endif

/* mallopt(M_ARENA_MAX, n): at most n malloc arenas from now on (threads that already
 * have one keep it). 1 when glibc took it, 0 otherwise. */
int door_malloc_arena_max(int n);

#ifdef __cplusplus
}
#endif
#endif
