/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The staging path (staging.c): local device memory to and from remote
 * UCX-reachable memory through a pool of registered host buffers (hixl's
 * BufferPool option).
 */
#ifndef HIXL_DEVICE_STAGING_H_
#define HIXL_DEVICE_STAGING_H_

#include "device/device.h"

/* Make sure the staging pool exists (dev->lock held). */
hixl_status_t hixl_stage_ready(hixl_engine_t *engine, hixl_dev_plugin_t *dp);
/* Add a staged descriptor to the unit's job. */
hixl_status_t hixl_stage_add(hixl_dev_unit_t *unit, hixl_transfer_op_t op,
                             hixl_dev_plugin_t *dp, int32_t device,
                             uint64_t local, uint64_t remote, uint64_t len,
                             ucp_rkey_h rkey);
void hixl_stage_queue(hixl_engine_t *engine, hixl_stage_job_t *job);
/* Advance the pipeline (engine->lock and dev->lock held). */
unsigned hixl_stage_progress(hixl_engine_t *engine);
/* 1 when the job's chunks are all done (and, for WRITE, flushed). */
int hixl_stage_job_poll(hixl_engine_t *engine, hixl_stage_job_t *job);
void hixl_stage_job_free(hixl_stage_job_t *job);
void hixl_stage_cleanup(hixl_engine_t *engine);

#endif
