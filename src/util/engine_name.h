/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine names: "ip:port" (listening), "ip" (client-only), IPv6 as
 * "[addr]:port" / "[addr]" / "addr".  Names are compared in canonical form
 * so that "::1" and "0::1" name the same engine.
 */
#ifndef HIXL_ENGINE_NAME_H_
#define HIXL_ENGINE_NAME_H_

#include <hixl/hixl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct hixl_name {
    char                    canon[HIXL_ENGINE_NAME_MAX + 1];
    struct sockaddr_storage addr;    /* with the port (0 when none) */
    socklen_t               addrlen;
    uint16_t                port;    /* 0: client-only */
} hixl_name_t;

/* Parse a name; PARAM_INVALID with a message saying what is wrong. */
hixl_status_t hixl_name_parse(const char *text, hixl_name_t *name);

/* Lookups by name try the spelling the caller used first and pay for
 * parsing it only on a miss: the spelling for try `pass` (0, then 1), or
 * NULL when there is no other (the name does not parse). */
static inline const char *hixl_name_spelling(const char *remote, int pass,
                                             hixl_name_t *canon)
{
    if (pass == 0) {
        return remote;
    }
    return (hixl_name_parse(remote, canon) == HIXL_SUCCESS) ? canon->canon :
           NULL;
}

/* Loop over the spellings of remote to look up (see hixl_name_spelling). */
#define hixl_name_for_each_spelling(_name, _remote, _canon, _pass) \
    for ((_pass) = 0; \
         ((_pass) < 2) && \
         (((_name) = hixl_name_spelling((_remote), (_pass), (_canon))) != \
          NULL); \
         ++(_pass))

/* Set the port (after an ephemeral listen) and rebuild the canonical form. */
void hixl_name_set_port(hixl_name_t *name, uint16_t port);

#endif
