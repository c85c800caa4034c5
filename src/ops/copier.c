/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Same-host copies off the caller's thread (copier.h).
 */
#include "config.h"
#include "ops/copier.h"
#include "ops/copy_batch.h"
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
 * reuse the buffers, so its queued copies stop at the next run. */
static int hixl_copier_wanted(hixl_engine_t *engine,
                              const hixl_copy_batch_t *job)
{
    hixl_request_t *req = hixl_req_lookup(&engine->reqs, job->req_handle);

    return (req != NULL) && (atomic_load(&req->status) == HIXL_SUCCESS);
}

/* Where the run of pieces from k ends: at most HIXL_COPY_PIECE_MAX bytes
 * (one piece at least), so that a close waits for about a millisecond. */
static size_t hixl_copier_run_end(const hixl_copy_batch_t *job, size_t k)
{
    size_t bytes = job->local[k].iov_len;

    for (++k; k < job->count; ++k) {
        bytes += job->local[k].iov_len;
        if (bytes > HIXL_COPY_PIECE_MAX) {
            break;
        }
    }
    return k;
}

/* One job: run by run while its connection lives and its request waits;
 * then its slot is answered (the flushes that wait for it go on), with
 * the failure, if any, recorded in its request first. */
static void hixl_copier_run(hixl_engine_t *engine, hixl_copy_batch_t *job)
{
    hixl_status_t status = HIXL_SUCCESS;
    hixl_request_t *req;
    char why[HIXL_ERROR_MSG_MAX] = "";
    size_t k, end;

    for (k = 0; (k < job->count) && (status == HIXL_SUCCESS) &&
                hixl_copier_wanted(engine, job); k = end) {
        end = hixl_copier_run_end(job, k);
        if (!hixl_chan_copy_begin(engine, job->chan, job->chan_id)) {
            return;   /* closed: its transfers ended with it */
        }
        status = hixl_copy_batch_run(job, k, end);
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
    hixl_copy_batch_t *job = (hixl_copy_batch_t*)work;
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
                               hixl_request_t *req, hixl_copy_batch_t *batch)
{
    hixl_status_t status;

    hixl_assert_locked(&engine->lock);
    if (engine->copier == NULL) {
        engine->copier = hixl_workq_new(0);
    }
    batch->work.run   = hixl_copier_work;
    batch->engine     = engine;
    batch->chan       = chan;
    batch->chan_id    = chan->id;
    batch->req_handle = req->handle;
    /* counted before the thread can answer it: flushes wait for it */
    batch->slot       = hixl_chan_post(chan, HIXL_ANSWER_ELSEWHERE);
    if ((engine->copier != NULL) &&
        (hixl_workq_post(engine->copier, &batch->work) == 0)) {
        return HIXL_SUCCESS;
    }
    /* no thread to run it: the caller's thread does it */
    hixl_chan_answered(chan, batch->slot, HIXL_ANSWER_ELSEWHERE);
    status = hixl_copy_batch_run(batch, 0, batch->count);
    free(batch);
    return status;
}

void hixl_copier_stop(hixl_engine_t *engine)
{
    hixl_workq_free(engine->copier, hixl_copier_drop);
    engine->copier = NULL;
}
