/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer authentication with a shared secret (option hixl.Secret).
 *
 * Both sides prove they hold the secret before the listener sends anything
 * that grants access (its worker address, memory table, remote keys):
 *
 *   connector  HELLO(name, nonce_c) ------------------------>  listener
 *              <------------------------ AUTH_CHALLENGE(nonce_l)
 *              AUTH_RESPONSE(mac("connector", nonce_l, nonce_c,
 *                                 connector, listener)) ---->  verify
 *              <----- HELLO_ACK(..., proof = mac("listener", nonce_c,
 *                                 nonce_l, listener, connector))
 *   verify the proof before creating the endpoint
 *
 * mac is HMAC-SHA256 keyed with the secret.  Fresh nonces on both sides
 * stop replay; the role string and the order of the names stop a response
 * from being reflected back as a proof.
 */
#ifndef HIXL_AUTH_H_
#define HIXL_AUTH_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>

#define HIXL_AUTH_NONCE_LEN 32
#define HIXL_AUTH_MAC_LEN   32

/* Fill a nonce from the kernel's random source. */
hixl_status_t hixl_auth_nonce(uint8_t *nonce);

/* mac = HMAC-SHA256(secret, role \0 nonce_a nonce_b name_a \0 name_b \0). */
hixl_status_t hixl_auth_mac(const char *secret, const char *role,
                            const uint8_t *nonce_a, const uint8_t *nonce_b,
                            const char *name_a, const char *name_b,
                            uint8_t *mac);

/* Constant-time comparison of a received MAC (any length) with ours. */
int hixl_auth_mac_ok(const uint8_t *got, size_t got_len,
                     const uint8_t *want);

#endif
