/* Umbrella header of the pn532-sim's C helpers (functions Swift cannot call
 * directly: variadic, or declared only under feature macros; macros Swift
 * does not import). */
#include "pseudo_terminal.h"
#include "parent_death.h"
#include "kernel_device.h"
