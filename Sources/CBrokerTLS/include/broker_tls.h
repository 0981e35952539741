#ifndef DOORGATEWAY_BROKER_TLS_H
#define DOORGATEWAY_BROKER_TLS_H
#include <stddef.h>

/// A TLS client context for a broker reached by address but verified by
/// name (a `*.local` broker resolved by multicast DNS): the CA file and/or
/// directory, the client certificate chain and key when given, TLS >= 1.2,
/// peer verification on, and OpenSSL's own host name check against `host`
/// (X509_VERIFY_PARAM_set1_host, no partial wildcards), and `host` as the
/// server name indication (SNI). Returns an SSL_CTX *
/// (as void *, to be handed to libmosquitto's MOSQ_OPT_SSL_CTX and then
/// released with door_broker_tls_free), or NULL with the reason in `error`.
void *door_broker_tls_new(const char *ca_file, const char *ca_dir, const char *cert_file, const char *key_file,
                          const char *host, char *error, size_t error_size);
void door_broker_tls_free(void *ctx);

#endif
