#ifndef DOORGATEWAY_GPIOD_SHIM_H
#define DOORGATEWAY_GPIOD_SHIM_H
#include <gpiod.h>
#endif
