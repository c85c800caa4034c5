/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A queue of work items run by one thread (workq.h).
 */
#include "config.h"
#include "util/workq.h"

#include <stddef.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

void hixl_workq_init(hixl_workq_t *q)
{
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    q->running    = 0;
    q->stop       = 0;
    q->background = 0;
    q->head       = NULL;
    q->tail       = NULL;
}

hixl_workq_t *hixl_workq_new(int background)
{
    hixl_workq_t *q = malloc(sizeof(*q));

    if (q != NULL) {
        hixl_workq_init(q);
        q->background = background;
    }
    return q;
}

/* Linux: a thread's nice value is its own (PRIO_PROCESS with its tid).
 * Failing is harmless: the work runs at the priority it has. */
static void hixl_workq_lower_priority(void)
{
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}

void hixl_workq_free(hixl_workq_t *q, void (*drop)(hixl_work_t *work))
{
    if (q != NULL) {
        hixl_workq_stop(q, drop);
        free(q);
    }
}

static void *hixl_workq_main(void *arg)
{
    hixl_workq_t *q = arg;
    hixl_work_t *work;

    if (q->background) {
        hixl_workq_lower_priority();
    }
    pthread_mutex_lock(&q->lock);
    while (!q->stop) {
        work = q->head;
        if (work == NULL) {
            pthread_cond_wait(&q->cond, &q->lock);
            continue;
        }
        q->head = work->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        pthread_mutex_unlock(&q->lock);
        work->run(work);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

int hixl_workq_post(hixl_workq_t *q, hixl_work_t *work)
{
    pthread_mutex_lock(&q->lock);
    if (!q->running && !q->stop) {
        q->running = (pthread_create(&q->thread, NULL, hixl_workq_main,
                                     q) == 0);
    }
    if (!q->running || q->stop) {
        pthread_mutex_unlock(&q->lock);
        return -1;
    }
    work->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = work;
    } else {
        q->head = work;
    }
    q->tail = work;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

void hixl_workq_stop(hixl_workq_t *q, void (*drop)(hixl_work_t *work))
{
    hixl_work_t *work;

    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    if (q->running) {
        pthread_join(q->thread, NULL);
        q->running = 0;
    }
    while ((work = q->head) != NULL) {
        q->head = work->next;
        if (drop != NULL) {
            drop(work);
        }
    }
    q->tail = NULL;
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
}
