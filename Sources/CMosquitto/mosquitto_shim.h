#ifndef DOORGATEWAY_MOSQUITTO_SHIM_H
#define DOORGATEWAY_MOSQUITTO_SHIM_H
#include <mosquitto.h>
#endif
