/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copies straight between two processes of one host (Linux cross-memory
 * attach: process_vm_writev / process_vm_readv), for host memory that UCX
 * can reach only through messages.
 *
 * Why: between processes of one host, UCX 1.13 moves puts into memory it
 * did not allocate (hixl_register_mem of the application's buffers) as
 * messages through the target's shared-memory receive queue, and so would
 * the library's own messages (core/xfer/am_data.h).  That queue is shared by
 * every sender, and a sender killed between reserving a slot and marking
 * it written leaves a hole that blocks the queue for good: one dying
 * prefill stops a decode for every other prefill on the host, and no UCX
 * version recovers.  A kernel copy shares nothing: a writer that dies
 * mid-copy leaves only the bytes it copied, and the copy is complete when
 * the call returns (no answer to wait for).  UCX's own cma transport does
 * the same copies, but UCX 1.13 never picks it for puts.
 *
 * Safety: a pid alone could name another process (another pid namespace,
 * or a pid reused after a death, or a peer that lies), so a connector uses
 * it only after the kernel has shown that this pid holds the other end of
 * their control connection (hixl_cma_probe, wire/sock_owner.h).  Remote ranges are checked against
 * the listener's region table like every other transfer; a process may
 * forbid such access (ptrace rules, Yama), and then library messages carry
 * the data as before.
 */
#ifndef HIXL_CORE_CMA_H_
#define HIXL_CORE_CMA_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Whether process pid holds the other end of the TCP connection fd and
 * this process may copy into its memory: 0, or the errno that says why not
 * (EPERM/EACCES: not allowed to; ESRCH: no such process; ESTALE: another
 * process holds it). */
int hixl_cma_probe(pid_t pid, int fd);

/* Copy len bytes between local and remote address `remote` in pid (write:
 * local -> remote).  HIXL_SUCCESS once every byte is there; NOT_CONNECTED
 * when the kernel says pid is gone (ESRCH: the peer died, whatever its
 * connection says yet); else FAILED.  The reason is in hixl's last
 * error. */
hixl_status_t hixl_cma_copy(pid_t pid, int write, void *local,
                            uint64_t remote, size_t len);

/* The same for count pieces at once, local[k] <-> remote[k] (equal
 * lengths), in as few calls as the kernel takes (IOV_MAX pieces each):
 * small scattered blocks cost a call per thousand, not one each.  The
 * arrays are changed during a call and put back.  On a failure *stopped
 * is the piece that was not copied whole, and the reason says after how
 * many of its bytes it stopped. */
hixl_status_t hixl_cma_copyv(pid_t pid, int write, struct iovec *local,
                             struct iovec *remote, size_t count,
                             size_t *stopped);

#endif
