/* SPDX-License-Identifier: MIT */
/*
 * The vqs-blk program in a child process and a vhost-user frontend driving it: what the blk
 * tests share. Public API only; requests are built by hand as a guest driver would.
 */
#ifndef VQS_TEST_BLK_FIXTURE_H
#define VQS_TEST_BLK_FIXTURE_H

#include <sys/types.h>
#include <vqsched/vqsched.h>

#define BLK_T_IN 0
#define BLK_T_OUT 1
#define BLK_T_FLUSH 4
#define BLK_T_GET_ID 8
#define BLK_T_DISCARD 11
#define BLK_S_OK 0
#define BLK_S_IOERR 1
#define BLK_S_UNSUPP 2
#define BLK_F_FLUSH 9
#define BLK_F_MQ 12
#define BLK_F_DISCARD 13

struct blk_env {
	char sock[108], file[108];
	uint64_t disk_bytes;
	uint16_t queues;
	bool client; /* vqs-blk connects (--client) to our listening frontend */
	bool packed; /* packed rings (set before blk_env_start's frontend setup: see below) */
	pid_t pid; /* the running vqs-blk, 0 when none */
	struct vqs_vu_frontend *f;
};

/* Fresh socket and disk paths, the disk created with `bytes`; vqs-blk started (in client mode:
 * connecting to us) and a frontend with `queues` queues connected and set up. 0 or -errno. */
int blk_env_start(struct blk_env *e, uint64_t bytes, uint16_t queues, bool client);
/* The same with packed rings offered by vqs-blk (--packed) and wanted by the frontend. */
int blk_env_start_packed(struct blk_env *e, uint64_t bytes, uint16_t queues);
/* Frontend destroyed, vqs-blk stopped with SIGTERM; returns its exit status (0 = clean). */
int blk_env_stop(struct blk_env *e);
/* SIGKILL vqs-blk and reap it. 0 or -errno. */
int blk_env_kill(struct blk_env *e);
/* Start vqs-blk again on the same socket and disk, reconnect the frontend (same inflight region,
 * rings kept) and kick every queue. 0 or -errno. */
int blk_env_restart(struct blk_env *e);
void blk_env_kick(struct blk_env *e, unsigned q);

/* One request slot in guest memory: header (16 readable bytes), data, status (1 writable). */
struct blk_slot {
	uint64_t hdr, data, status;
	uint32_t data_cap;
};
int blk_slot_alloc(struct blk_env *e, struct blk_slot *s, uint32_t data_cap);
/* Fill the header and add the usual chain (header, data readable for OUT or writable otherwise,
 * status) to queue q with `token`; not kicked. */
int blk_slot_add(struct blk_env *e, unsigned q, struct blk_slot *s, uint32_t type, uint64_t sector,
		 uint32_t data_len, void *token);
uint8_t blk_slot_status(struct blk_env *e, const struct blk_slot *s);
void *blk_host(struct blk_env *e, uint64_t gpa, size_t len);

/* Add the chain bufs[0..out+in) to queue q, kick, wait (bounded) for its completion. Returns
 * the written length, or -ETIMEDOUT / -errno. */
int blk_submit_wait(struct blk_env *e, unsigned q, const struct vqs_drv_buf *bufs, unsigned out,
		    unsigned in);

#endif
