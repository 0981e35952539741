/* Umbrella header of the pn532-sim's C helpers (functions Swift cannot call
 * directly: variadic, or declared only under feature macros). */
#include "pseudo_terminal.h"
#include "parent_death.h"
