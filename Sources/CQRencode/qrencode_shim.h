#ifndef DOORGATEWAY_QRENCODE_SHIM_H
#define DOORGATEWAY_QRENCODE_SHIM_H
#include <qrencode.h>
#endif
