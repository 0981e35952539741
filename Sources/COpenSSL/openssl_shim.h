#ifndef DOORGATEWAY_OPENSSL_SHIM_H
#define DOORGATEWAY_OPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#endif
