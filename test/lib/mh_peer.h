/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The multi-host peer: ONE engine in its own process (started inside a
 * namespace host by mh_proc.h), obeying line commands on stdin and
 * answering on stdout.  The it_mh_* programs run it as
 *
 *     it_mh_<suite> --peer ENGINE_NAME [KEY=VALUE ...]
 *
 * (ENGINE_NAME "ip:0" listens on a kernel-chosen port: a decode; "ip" is
 * client-only: a prefill; KEY=VALUE are hixl options; the environment,
 * HIXL_* and UCX_* included, is the spawner's).  It can be driven by hand
 * the same way.  Its stderr is whatever the spawner made it (a file the
 * test reads: UCX warnings and aborts land there).
 *
 * Start-up: one line "READY name=<engine name> pid=<pid>" or
 * "FAIL status=... msg=...".  Then every command gets exactly one reply:
 * a line starting "OK" or "ERR <why>"; a reply "OK lines=K ..." is
 * followed by exactly K more lines.  Replies of hixl calls read
 *
 *     OK status=<HIXL_...> code=<n> ms=<elapsed> t=<end> msg=<hixl_last_error>
 *
 * (msg is always last and runs to the end of the line; times are
 * CLOCK_MONOTONIC milliseconds, one clock for every process on the
 * machine, so the test compares them with its own).
 *
 * Memory (regions are numbered from 0 in the order made):
 *   alloc LEN                 hixl_alloc_mem  -> OK region=I addr=0x.. len=N
 *   mmap LEN                  mmap + hixl_register_mem, same reply
 *   fill I OFF LEN SEED       region bytes = pattern SEED at index OFF..
 *   verify I OFF LEN SEED [OLD]
 *                             OK match=1, or OK match=0 nbad=N nold=M
 *                             first=OFF last=OFF got=0x.. want=0x..
 *                             (nold: bad bytes that are pattern OLD's)
 * Connections and transfers (REMOTE is an engine name):
 *   connect REMOTE TIMEOUT_MS / disconnect REMOTE TIMEOUT_MS
 *   write REMOTE I OFF RADDR LEN TIMEOUT_MS
 *                             hixl_transfer_sync of region I [OFF, +LEN)
 *                             to RADDR
 *   read REMOTE I OFF RADDR LEN TIMEOUT_MS   the same from RADDR
 *   stream REMOTE I RADDR RLEN SIZE COUNT INFLIGHT TIMEOUT_MS
 *                             COUNT async WRITEs of SIZE, INFLIGHT at a
 *                             time, write k from region I offset
 *                             (k*SIZE)%RLEN to RADDR + the same offset,
 *                             each with args.timeout_ms TIMEOUT_MS.
 *                             Stops posting at the first refused post or
 *                             at `stop`, then waits for the requests in
 *                             flight.  Reply: OK lines=K posted=.. ...
 *                             then one line per request
 *                               r IDX post=T end=T st=COMPLETED|FAILED|
 *                                 TIMEOUT|STUCK|CALLERR call=<status>
 *                                 msg=...
 *                             and a last line
 *                               post status=<refused post's status or
 *                                 NONE> t=T msg=...
 *                             (STUCK: still WAITING TIMEOUT_MS + 30 s
 *                             after its post; CALLERR: the status call
 *                             itself failed).  Run it with bg.
 *   progress JOB              OK posted=.. ended=.. inflight=..
 *                             completed=.. failed=.. finished=0|1 of a
 *                             running stream
 *   stop JOB                  a stream posts no more
 * Layers and notifies:
 *   flush REMOTE STREAM GEN LAYER
 *   wait_layer SRC STREAM GEN LAYER TIMEOUT_MS  (blocks: use bg)
 *   test_layer SRC STREAM GEN LAYER          OK ... ready=0|1
 *   notify REMOTE NAME TIMEOUT_MS            hixl_send_notify
 *   notifies                                 OK n=K (drained)
 *   state REMOTE              OK connected=0|1 status=...: whether a 1 s
 *                             notify to REMOTE gets through (the API has
 *                             no other way to ask; REMOTE receives it)
 * Background:
 *   bg COMMAND ...            run COMMAND in a thread -> OK job=N
 *   job N TIMEOUT_MS          wait up to TIMEOUT_MS: the command's own
 *                             reply when it ended, else "PENDING job=N"
 * Process:
 *   fds                       OK fds=N (open descriptors)
 *   socks                     OK lines=K: the TCP sockets this process
 *                             holds, one per line
 *   name                      OK name=<engine name>
 *   finalize                  hixl_finalize (ERR while jobs run, unless
 *                             "finalize force")
 *   quit                      OK, then exit(0) without finalizing
 * End of stdin (the test is gone) exits at once.
 */
#ifndef HX_MH_PEER_H_
#define HX_MH_PEER_H_

/* argv[0] is "--peer"; returns the exit status. */
int mh_peer_main(int argc, char **argv);

/* Last resort against a peer nobody stops (seconds). */
#define MH_PEER_ALARM_S 900

#endif
