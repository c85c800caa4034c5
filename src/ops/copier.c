/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Same-host copies off the caller's thread (copier.h).
 */
#include "config.h"
#include "ops/copier.h"
#include "core/peer/channel.h"
#include "core/peer/cma.h"
#include "core/engine.h"
#include "core/xfer/request.h"
#include "util/copy.h"
#include "util/debug.h"
#include "util/log.h"
#include "util/workq.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Between two chunks the thread looks whether the connection still lives:
 * a close waits for at most one chunk (about a millisecond). */
#define HIXL_COPY_CHUNK (8u << 20)

typedef struct hixl_copy_job {
    hixl_work_t           work;   /* first: the queue's item */
    hixl_engine_t        *engine;
    hixl_chan_t          *chan;
    uint64_t              chan_id;
    unsigned              slot;
    uint64_t              req_handle;
    int                   write;
    pid_t                 pid;
    void                 *local;
    uint64_t              remote;
    size_t                len;
    int                   stream;
} hixl_copy_job_t;

hixl_status_t hixl_copy_now(int write, pid_t pid, void *local,
                            uint64_t remote, size_t len, int stream)
{
    void *r         = (void*)(uintptr_t)remote;
    void *dst       = write ? r : local;
    const void *src = write ? local : r;

    if (pid != 0) {
        return hixl_cma_copy(pid, write, local, remote, len);
    }
    if (stream) {
        hixl_copy_past_caches(dst, src, len);
    } else {
        memcpy(dst, src, len);
    }
    return HIXL_SUCCESS;
}

int hixl_copier_enabled(const hixl_engine_t *engine)
{
    return engine->progress.running &&
           (engine->opts.async_copy == HIXL_ASYNC_COPY_THREAD);
}

/* Whether the job's request still waits for its bytes: one that ended
 * (reported TIMEOUT, or failed in another descriptor) has let its caller
 * reuse the buffers, so its queued copies stop at the next chunk. */
static int hixl_copier_wanted(hixl_engine_t *engine,
                              const hixl_copy_job_t *job)
{
    hixl_request_t *req = hixl_req_lookup(&engine->reqs, job->req_handle);

    return (req != NULL) && (atomic_load(&req->status) == HIXL_SUCCESS);
}

/* One job: chunk by chunk while its connection lives and its request
 * waits; then its slot is answered (the flushes that wait for it go on),
 * with the failure, if any, recorded in its request first. */
static void hixl_copier_run(hixl_engine_t *engine, hixl_copy_job_t *job)
{
    hixl_status_t status = HIXL_SUCCESS;
    hixl_request_t *req;
    char why[HIXL_ERROR_MSG_MAX] = "";
    size_t off, n;

    for (off = 0; (off < job->len) && (status == HIXL_SUCCESS) &&
                  hixl_copier_wanted(engine, job); off += n) {
        n = job->len - off;
        n = (n > HIXL_COPY_CHUNK) ? HIXL_COPY_CHUNK : n;
        if (!hixl_chan_copy_begin(engine, job->chan, job->chan_id)) {
            return;   /* closed: its transfers ended with it */
        }
        status = hixl_copy_now(job->write, job->pid,
                               (char*)job->local + off, job->remote + off, n,
                               job->stream);
        hixl_chan_copy_end(job->chan);
        if (status != HIXL_SUCCESS) {
            snprintf(why, sizeof(why), "%s", hixl_error_message());
        }
    }
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (hixl_chan_lookup(engine, job->chan_id) == job->chan) {
        req = (status != HIXL_SUCCESS) ?
              hixl_req_lookup(&engine->reqs, job->req_handle) : NULL;
        if ((req != NULL) && (status == HIXL_NOT_CONNECTED) &&
            (req->peer != NULL)) {
            hixl_peer_gone(req->peer);
        }
        if (req != NULL) {
            hixl_req_fail(req, status, "%s", why);
        }
        hixl_chan_answered(job->chan, job->slot, HIXL_ANSWER_ELSEWHERE);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

/* The queue's thread: one job.  Its answer may have completed a flush
 * (and its requests) here; the next flush that leaves due is issued here
 * too.  Waking the progress thread for it instead cost a wake-up per job
 * and the polling that follows one: with 16 engines of 3 threads each on
 * 2 cores, fan-in over shared memory fell to a quarter. */
static void hixl_copier_work(hixl_work_t *work)
{
    hixl_copy_job_t *job   = (hixl_copy_job_t*)work;
    hixl_engine_t *engine  = job->engine;

    hixl_copier_run(engine, job);
    free(job);
    hixl_progress_flush_due(engine);
}

static void hixl_copier_drop(hixl_work_t *work)
{
    free(work);
}

hixl_status_t hixl_copier_post(hixl_engine_t *engine, hixl_chan_t *chan,
                               hixl_request_t *req, int write, pid_t pid,
                               void *local, uint64_t remote, size_t len,
                               int stream)
{
    hixl_copy_job_t *job;

    hixl_assert_locked(&engine->lock);
    if (engine->copier == NULL) {
        engine->copier = hixl_workq_new(0);
    }
    job = (engine->copier != NULL) ? calloc(1, sizeof(*job)) : NULL;
    if (job == NULL) {   /* out of memory: the caller's thread does it */
        return hixl_copy_now(write, pid, local, remote, len, stream);
    }
    job->work.run   = hixl_copier_work;
    job->engine     = engine;
    job->chan       = chan;
    job->chan_id    = chan->id;
    job->req_handle = req->handle;
    job->write      = write;
    job->pid        = pid;
    job->local      = local;
    job->remote     = remote;
    job->len        = len;
    job->stream     = stream;
    /* counted before the thread can answer it: flushes wait for it */
    job->slot       = hixl_chan_post(chan, HIXL_ANSWER_ELSEWHERE);
    if (hixl_workq_post(engine->copier, &job->work) != 0) {
        hixl_chan_answered(chan, job->slot, HIXL_ANSWER_ELSEWHERE);
        free(job);
        return hixl_copy_now(write, pid, local, remote, len, stream);
    }
    return HIXL_SUCCESS;
}

void hixl_copier_stop(hixl_engine_t *engine)
{
    hixl_workq_free(engine->copier, hixl_copier_drop);
    engine->copier = NULL;
}
