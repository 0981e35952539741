#ifndef DOORGATEWAY_NFC_SHIM_H
#define DOORGATEWAY_NFC_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <nfc/nfc.h>

/* Exported by libnfc (libnfc.so and libnfc.a) but not declared in its public
 * headers: sends one PN53x command (command code first, without the D4 TFI)
 * and returns the answer's bytes after the response code, or a negative
 * NFC_E* code. `timeout` is in ms; never pass 0 (waits forever). The reader
 * adapter uses it for InAutoPoll, InDataExchange and RFConfiguration so every
 * wait has its own bound (libnfc 1.8.0 chips/pn53x.c). */
int pn53x_transceive(struct nfc_device *pnd, const uint8_t *pbtTx, const size_t szTx,
                     uint8_t *pbtRx, const size_t szRxLen, int timeout);
#endif
