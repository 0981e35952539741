#include "broker_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>

static void *fail(SSL_CTX *ctx, const char *what, char *error, size_t error_size) {
    unsigned long e = ERR_get_error();
    char reason[256] = "";
    if (e) ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    if (error && error_size) snprintf(error, error_size, "%s%s%s", what, e ? ": " : "", reason);
    if (ctx) SSL_CTX_free(ctx);
    return NULL;
}

/* libmosquitto sets the server name indication to the host it connects to,
 * here an address; at the start of the handshake (before the ClientHello is
 * written) the name being verified takes its place, so a broker behind a
 * proxy that routes by SNI is reached too. */
static void name_the_server(const SSL *ssl, int where, int ret) {
    (void)ret;
    if (!(where & SSL_CB_HANDSHAKE_START)) return;
    const char *host = X509_VERIFY_PARAM_get0_host(SSL_get0_param((SSL *)ssl), 0);
    if (host) SSL_set_tlsext_host_name((SSL *)ssl, host);
}

void *door_broker_tls_new(const char *ca_file, const char *ca_dir, const char *cert_file, const char *key_file,
                          const char *host, char *error, size_t error_size) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return fail(NULL, "SSL_CTX_new", error, error_size);
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return fail(ctx, "TLS 1.2", error, error_size);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
    if (ca_file || ca_dir) {
        if (SSL_CTX_load_verify_locations(ctx, ca_file, ca_dir) != 1)
            return fail(ctx, "cannot load the CA", error, error_size);
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return fail(ctx, "cannot load the system's CAs", error, error_size);
    }
    if (cert_file) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
            return fail(ctx, "cannot load the client certificate", error, error_size);
        if (SSL_CTX_use_PrivateKey_file(ctx, key_file ? key_file : cert_file, SSL_FILETYPE_PEM) != 1)
            return fail(ctx, "cannot load the client key", error, error_size);
        if (SSL_CTX_check_private_key(ctx) != 1)
            return fail(ctx, "the client key does not match its certificate", error, error_size);
    }
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (!host || X509_VERIFY_PARAM_set1_host(param, host, 0) != 1)
        return fail(ctx, "cannot set the host name to verify", error, error_size);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_info_callback(ctx, name_the_server);
    return ctx;
}

void door_broker_tls_free(void *ctx) { SSL_CTX_free((SSL_CTX *)ctx); }
