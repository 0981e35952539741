#include "fuzz_libnfc.h"

#include <nfc/nfc.h>

/* Declared in Sources/CNFC/nfc_shim.h; libnfc exports it without a header. */
int pn53x_transceive(struct nfc_device *pnd, const uint8_t *pbtTx, const size_t szTx, uint8_t *pbtRx,
                     const size_t szRxLen, int timeout);

static dg_fuzz_answer_fn current_answer;
static size_t commands;
/* Never dereferenced by NFCReader: it only passes the pointers back. */
static char fake_context[16], fake_device[16];

void dg_fuzz_libnfc_set_answer(dg_fuzz_answer_fn answer) {
    current_answer = answer;
    commands = 0;
}

size_t dg_fuzz_libnfc_commands(void) { return commands; }

void nfc_init(nfc_context **context) { *context = (nfc_context *)fake_context; }

void nfc_exit(nfc_context *context) { (void)context; }

nfc_device *nfc_open(nfc_context *context, const nfc_connstring connstring) {
    (void)context;
    (void)connstring;
    return (nfc_device *)fake_device;
}

void nfc_close(nfc_device *pnd) { (void)pnd; }

int nfc_initiator_init(nfc_device *pnd) {
    (void)pnd;
    return 0;
}

int nfc_device_set_property_bool(nfc_device *pnd, const nfc_property property, const bool bEnable) {
    (void)pnd;
    (void)property;
    (void)bEnable;
    return 0;
}

const char *nfc_strerror(const nfc_device *pnd) {
    (void)pnd;
    return "fuzz: scripted failure";
}

int pn53x_transceive(struct nfc_device *pnd, const uint8_t *pbtTx, const size_t szTx, uint8_t *pbtRx,
                     const size_t szRxLen, int timeout) {
    (void)pnd;
    (void)timeout;
    commands++;
    if (!current_answer) return NFC_EIO;
    return current_answer(pbtTx, szTx, pbtRx, szRxLen);
}
