#ifndef DOORGATEWAY_FUZZ_LIBNFC_H
#define DOORGATEWAY_FUZZ_LIBNFC_H
#include <stddef.h>
#include <stdint.h>

/* A stand-in for the libnfc calls NFCReader makes (nfc_init, nfc_open,
 * nfc_initiator_init, nfc_device_set_property_bool, nfc_close, nfc_exit,
 * nfc_strerror and libnfc's exported pn53x_transceive), linked only into the
 * fuzz-targets executable: a definition in an object file wins over the one in
 * libnfc.so, so the real NFCReader code runs and every answer "the chip" gives
 * comes from the fuzz input. `answer` gets the PN53x command (command code
 * first, as NFCReader passes it) and fills `rx`; it returns the answer's
 * length or a negative NFC_E* code, as pn53x_transceive does. */
typedef int (*dg_fuzz_answer_fn)(const uint8_t *tx, size_t tx_count, uint8_t *rx, size_t rx_capacity);

void dg_fuzz_libnfc_set_answer(dg_fuzz_answer_fn answer);
/* PN53x commands answered since the last set_answer (a bound for the harness). */
size_t dg_fuzz_libnfc_commands(void);
#endif
