#ifndef DOORGATEWAY_NATS_SHIM_H
#define DOORGATEWAY_NATS_SHIM_H
#include <nats/nats.h>
#endif
