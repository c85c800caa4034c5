/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer authentication: nonces and HMAC-SHA256 (libcrypto).
 */
#include "config.h"
#include "util/auth.h"
#include "util/log.h"

#include <string.h>
#include <sys/random.h>

#ifdef HAVE_CRYPTO
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif

hixl_status_t hixl_auth_nonce(uint8_t *nonce)
{
    size_t got = 0;
    ssize_t n;

    while (got < HIXL_AUTH_NONCE_LEN) {
        n = getrandom(nonce + got, HIXL_AUTH_NONCE_LEN - got, 0);
        if (n <= 0) {
            return hixl_error(HIXL_FAILED, "getrandom failed: no nonce for "
                              "authentication");
        }
        got += (size_t)n;
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_auth_mac(const char *secret, const char *role,
                            const uint8_t *nonce_a, const uint8_t *nonce_b,
                            const char *name_a, const char *name_b,
                            uint8_t *mac)
{
#ifdef HAVE_CRYPTO
    uint8_t msg[16 + 2 * HIXL_AUTH_NONCE_LEN + 2 * (HIXL_ENGINE_NAME_MAX + 1)];
    size_t len = 0, n;
    unsigned mac_len = 0;

    /* role \0 nonce_a nonce_b name_a \0 name_b \0 */
    n = strlen(role) + 1;
    memcpy(msg + len, role, n);
    len += n;
    memcpy(msg + len, nonce_a, HIXL_AUTH_NONCE_LEN);
    len += HIXL_AUTH_NONCE_LEN;
    memcpy(msg + len, nonce_b, HIXL_AUTH_NONCE_LEN);
    len += HIXL_AUTH_NONCE_LEN;
    n = strnlen(name_a, HIXL_ENGINE_NAME_MAX);
    memcpy(msg + len, name_a, n);
    msg[len + n] = '\0';
    len += n + 1;
    n = strnlen(name_b, HIXL_ENGINE_NAME_MAX);
    memcpy(msg + len, name_b, n);
    msg[len + n] = '\0';
    len += n + 1;
    if ((HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, len, mac,
              &mac_len) == NULL) || (mac_len != HIXL_AUTH_MAC_LEN)) {
        return hixl_error(HIXL_FAILED, "HMAC-SHA256 failed");
    }
    return HIXL_SUCCESS;
#else
    (void)secret; (void)role; (void)nonce_a; (void)nonce_b; (void)name_a;
    (void)name_b; (void)mac;
    return hixl_error(HIXL_UNSUPPORTED, "built without libcrypto: cannot "
                      "authenticate peers");
#endif
}

int hixl_auth_mac_ok(const uint8_t *got, size_t got_len, const uint8_t *want)
{
#ifdef HAVE_CRYPTO
    return (got_len == HIXL_AUTH_MAC_LEN) &&
           (CRYPTO_memcmp(got, want, HIXL_AUTH_MAC_LEN) == 0);
#else
    (void)got; (void)got_len; (void)want;
    return 0;
#endif
}
