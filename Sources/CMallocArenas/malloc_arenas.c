#include "malloc_arenas.h"

#include <malloc.h>

int door_malloc_arena_max(int n) { return mallopt(M_ARENA_MAX, n) == 1; }
