/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections that ended, remembered by name (see peer_ended.h).
 */
#include "config.h"
#include "ctrl/peer_ended.h"

#include "core/peer/peer.h"
#include "util/engine_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hixl_ended {
    struct hixl_ended *next;          /* newest first */
    char               name[HIXL_ENGINE_NAME_MAX + 1];   /* canonical */
    char               alias[HIXL_ENGINE_NAME_MAX + 1];  /* as connected */
    char               reason[HIXL_ERROR_MSG_MAX];
    int                outgoing;
    int                owed;          /* hixl_disconnect() still succeeds */
    int                has_resume;
    uint8_t            resume[HIXL_RESUME_LEN];
    uint64_t           instance;      /* its peer->remote_instance */
};

static int hixl_ended_match(const hixl_ended_t *e, const char *remote,
                            int outgoing)
{
    if ((outgoing >= 0) && (e->outgoing != outgoing)) {
        return 0;
    }
    return !strcmp(e->name, remote) || !strcmp(e->alias, remote);
}

/* The newest entry for remote: by the spelling the call used, else by its
 * canonical form; *prev_p gets the link that points at it. */
static hixl_ended_t *hixl_ended_find(hixl_ended_list_t *list, const char *remote,
                                     int outgoing, int owed_only,
                                     hixl_ended_t ***prev_p)
{
    hixl_ended_t **pp;
    hixl_name_t canon;
    const char *name;
    int pass;

    hixl_name_for_each_spelling(name, remote, &canon, pass) {
        for (pp = &list->head; *pp != NULL; pp = &(*pp)->next) {
            if ((!owed_only || (*pp)->owed) &&
                hixl_ended_match(*pp, name, outgoing)) {
                if (prev_p != NULL) {
                    *prev_p = pp;
                }
                return *pp;
            }
        }
    }
    return NULL;
}

/* Past the bound: drop the oldest entry nothing is owed for, else the
 * oldest of all. */
static void hixl_ended_trim(hixl_ended_list_t *list)
{
    hixl_ended_t **pp, **victim = NULL, **oldest = NULL;

    if (list->count <= HIXL_ENDED_MAX) {
        return;
    }
    for (pp = &list->head; *pp != NULL; pp = &(*pp)->next) {
        oldest = pp;
        if (!(*pp)->owed) {
            victim = pp;
        }
    }
    if (victim == NULL) {
        victim = oldest;
    }
    if (victim != NULL) {
        hixl_ended_t *e = *victim;

        *victim = e->next;
        free(e);
        --list->count;
    }
}

void hixl_ended_record(hixl_ended_list_t *list, const hixl_peer_t *peer,
                       int owed, const uint8_t *resume)
{
    hixl_ended_t *e;

    if (peer->name[0] == '\0') {
        return;   /* ended in its handshake: nobody can ask for it by name */
    }
    hixl_ended_forget(list, peer->name, hixl_peer_outgoing(peer));
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return;   /* only a poorer message later, or NOT_CONNECTED */
    }
    snprintf(e->name, sizeof(e->name), "%s", peer->name);
    snprintf(e->alias, sizeof(e->alias), "%s", peer->alias);
    snprintf(e->reason, sizeof(e->reason), "%s", peer->close_reason);
    e->outgoing = hixl_peer_outgoing(peer);
    e->owed     = owed;
    e->instance = peer->remote_instance;
    if (resume != NULL) {
        memcpy(e->resume, resume, HIXL_RESUME_LEN);
        e->has_resume = 1;
    }
    e->next     = list->head;
    list->head = e;
    ++list->count;
    hixl_ended_trim(list);
}

const char *hixl_ended_reason(hixl_ended_list_t *list, const char *remote,
                              int outgoing)
{
    hixl_ended_t *e = hixl_ended_find(list, remote, outgoing, 0, NULL);

    return (e != NULL) ? e->reason : NULL;
}

int hixl_ended_resume(hixl_ended_list_t *list, const char *name,
                      int outgoing, uint8_t *out, uint64_t *instance_p)
{
    hixl_ended_t *e = hixl_ended_find(list, name, outgoing, 0, NULL);

    if ((e == NULL) || !e->has_resume) {
        return 0;
    }
    memcpy(out, e->resume, HIXL_RESUME_LEN);
    *instance_p = e->instance;
    return 1;
}

int hixl_ended_acknowledge(hixl_ended_list_t *list, const char *remote,
                           char *reason, size_t reason_len)
{
    hixl_ended_t *e;

    /* an outgoing connection first, as hixl_peer_find prefers it */
    e = hixl_ended_find(list, remote, 1, 1, NULL);
    if (e == NULL) {
        e = hixl_ended_find(list, remote, 0, 1, NULL);
    }
    if (e == NULL) {
        return 0;
    }
    e->owed = 0;   /* kept for messages; the next disconnect is refused */
    snprintf(reason, reason_len, "%s", e->reason);
    return 1;
}

void hixl_ended_forget(hixl_ended_list_t *list, const char *name, int outgoing)
{
    hixl_ended_t **pp, *e;

    while (hixl_ended_find(list, name, outgoing, 0, &pp) != NULL) {
        e   = *pp;
        *pp = e->next;
        free(e);
        --list->count;
    }
}

void hixl_ended_cleanup(hixl_ended_list_t *list)
{
    hixl_ended_t *e;

    while ((e = list->head) != NULL) {
        list->head = e->next;
        free(e);
    }
    list->count = 0;
}
