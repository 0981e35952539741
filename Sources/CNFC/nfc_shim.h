#ifndef DOORGATEWAY_NFC_SHIM_H
#define DOORGATEWAY_NFC_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <nfc/nfc.h>
#endif
