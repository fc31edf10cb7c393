/* SPDX-License-Identifier: MIT */
/*
 * The driver side of a packed ring against the MUST clauses of virtio 1.x 2.8, mostly through a
 * driver + device pair (tests/common/pair.h), reading the ring in guest memory where the clause
 * is about what the driver writes there.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "packed_fixture.h"
#include "pair.h"

#define BASE 0x10000000ull
#define ARENA (1u << 20)
#define F_IND VQS_BIT(VQS_F_INDIRECT_DESC)
#define F_EVIDX VQS_BIT(VQS_F_EVENT_IDX)
#define WRAP_BIT (1u << VQS_VRING_PACKED_EVENT_F_WRAP_CTR)

struct fx {
	struct vqs_pair p;
	struct vqs_vring_packed_desc *desc;
	uint64_t bufs; /* 64 KiB of buffers */
};

static void fx_init(struct fx *f, unsigned num, uint64_t features)
{
	assert_int_equal(vqs_pair_init(&f->p, num, features | PFX_PACKED, BASE, ARENA), 0);
	uint64_t d, drv, dev;
	vqs_drv_vq_addrs(f->p.drv, &d, &drv, &dev);
	f->desc = vqs_gmem_host(f->p.gmem, d, vqs_vring_packed_desc_size(num));
	assert_non_null(f->desc);
	f->bufs = vqs_gmem_alloc(f->p.gmem, 1u << 16, 64);
	assert_true(f->bufs != 0);
}

static void fx_fini(struct fx *f) { vqs_pair_fini(&f->p); }

static uint16_t flags_at(struct fx *f, unsigned i)
{
	return atomic_load_explicit((_Atomic uint16_t *)&f->desc[i].flags, memory_order_acquire);
}

static int dev_pop(struct fx *f, struct vqs_elem *e, struct iovec *iov, unsigned cap)
{
	return pfx_pop(f->p.dev, e, iov, cap);
}

/* Device: pop one chain, report `written` bytes, flush. Returns the elem. */
static struct vqs_elem dev_complete(struct fx *f, uint32_t written)
{
	static struct iovec iov[16];
	struct vqs_elem e;
	assert_int_equal(dev_pop(f, &e, iov, 16), 0);
	assert_int_equal(vqs_vq_fill(f->p.dev, &e, written), 0);
	assert_int_equal(vqs_vq_flush(f->p.dev), 1);
	return e;
}

static void add_one(struct fx *f, unsigned out, unsigned in, void *token, bool indirect)
{
	struct vqs_drv_buf b[8];
	for (unsigned k = 0; k < out + in; k++)
		b[k] = (struct vqs_drv_buf){f->bufs + 64u * k, 64};
	assert_int_equal(vqs_drv_add(f->p.drv, b, out, in, token, indirect), 0);
}

static int tok[64];

/* 2.8.21.1 / 2.8.6: AVAIL equal and USED opposite to the driver's wrap counter, NEXT on all but
 * the last descriptor, WRITE on the writable ones, the buffer id in the last one. */
static void driver_must_set_avail_used_next_write_flags_and_last_id(void **state)
{
	struct fx f;
	fx_init(&f, 8, 0);
	add_one(&f, 2, 1, &tok[0], false);
	vqs_drv_kick_prepare(f.p.drv);
	uint16_t want[3] = {PFX_F_AVAIL | VQS_VRING_DESC_F_NEXT, PFX_F_AVAIL | VQS_VRING_DESC_F_NEXT,
			    PFX_F_AVAIL | VQS_VRING_DESC_F_WRITE};
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(flags_at(&f, i), want[i]);
	struct vqs_elem e = dev_complete(&f, 64);
	assert_int_equal(e.id, f.desc[2].id);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[0]);
	assert_int_equal(len, 64);
	/* Second round: after the ring end the wrap counter is 0, so AVAIL clear and USED set. */
	for (unsigned r = 0; r < 2; r++) {
		add_one(&f, 1, 1, &tok[1], false);
		vqs_drv_kick_prepare(f.p.drv);
		dev_complete(&f, 0);
		assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[1]);
	}
	add_one(&f, 1, 0, &tok[2], false); /* slot 7 */
	add_one(&f, 1, 0, &tok[3], false); /* slot 0 of the next round */
	vqs_drv_kick_prepare(f.p.drv);
	assert_int_equal(flags_at(&f, 7), PFX_F_AVAIL);
	assert_int_equal(flags_at(&f, 0), PFX_F_USED);
	fx_fini(&f);
}

/* 2.8.21.1: the driver MUST NOT make the first descriptor of a list available before all
 * subsequent ones; here: a batch's first head stays unavailable until kick_prepare. */
static void driver_must_not_make_head_available_before_the_rest(void **state)
{
	struct fx f;
	fx_init(&f, 8, 0);
	uint16_t before = flags_at(&f, 0);
	add_one(&f, 1, 1, &tok[0], false);
	add_one(&f, 2, 0, &tok[1], false);
	/* The chain's other descriptors are written, its head is not yet. */
	assert_int_equal(flags_at(&f, 0), before);
	assert_int_equal(flags_at(&f, 1), PFX_F_AVAIL | VQS_VRING_DESC_F_WRITE);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(dev_pop(&f, &e, iov, 4), -EAGAIN);
	vqs_drv_kick_prepare(f.p.drv);
	assert_int_equal(dev_pop(&f, &e, iov, 4), 0);
	assert_int_equal(dev_pop(&f, &e, iov, 4), 0);
	assert_int_equal(e.ndescs, 2);
	fx_fini(&f);
}

/* The same rule under concurrency: a device thread polling the ring never sees a chain whose
 * descriptors are not all written (TSan checks the release/acquire pairing too). */
struct order {
	struct fx *f;
	unsigned n;
	_Atomic int bad;
};

static void *order_device(void *arg)
{
	struct order *o = arg;
	struct iovec iov[4];
	struct vqs_elem e;
	uint64_t deadline = vqs_now_ns() + 30ull * 1000000000ull;
	for (unsigned got = 0; got < o->n && !atomic_load(&o->bad);) {
		int rc = dev_pop(o->f, &e, iov, 4);
		if (rc == -EAGAIN) {
			if (vqs_now_ns() > deadline)
				atomic_store(&o->bad, 1);
			continue;
		}
		/* Chain k has 1 + k % 3 descriptors of (k % 50 + 1) bytes each. */
		unsigned k = got;
		if (rc || e.ndescs != 1 + k % 3 || e.out_len != (k % 50 + 1) * e.ndescs)
			atomic_store(&o->bad, 2);
		assert_int_equal(vqs_vq_fill(o->f->p.dev, &e, 0), 0);
		vqs_vq_flush(o->f->p.dev);
		got++;
	}
	return NULL;
}

static void driver_must_make_descriptors_visible_before_head_flags(void **state)
{
	struct fx f;
	fx_init(&f, 16, 0);
	struct order o = {.f = &f, .n = 20000};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, order_device, &o), 0);
	uint64_t deadline = vqs_now_ns() + 30ull * 1000000000ull;
	for (unsigned k = 0; k < o.n && !atomic_load(&o.bad);) {
		uint32_t len;
		while (vqs_drv_get_used(f.p.drv, &len))
			;
		struct vqs_drv_buf b[3];
		for (unsigned i = 0; i < 1 + k % 3; i++)
			b[i] = (struct vqs_drv_buf){f.bufs + 64u * i, k % 50 + 1};
		int rc = vqs_drv_add(f.p.drv, b, 1 + k % 3, 0, &tok[0], false);
		if (rc == -ENOSPC) {
			if (vqs_now_ns() > deadline)
				atomic_store(&o.bad, 3);
			continue;
		}
		assert_int_equal(rc, 0);
		vqs_drv_kick_prepare(f.p.drv);
		k++;
	}
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&o.bad), 0);
	fx_fini(&f);
}

/* 2.8.19: in an indirect table only WRITE may be set; the ring descriptor carries INDIRECT and
 * the table's length, and occupies one slot. */
static void driver_must_set_only_write_inside_indirect_table(void **state)
{
	struct fx f;
	fx_init(&f, 8, F_IND);
	add_one(&f, 2, 2, &tok[0], true);
	vqs_drv_kick_prepare(f.p.drv);
	assert_int_equal(flags_at(&f, 0), PFX_F_AVAIL | VQS_VRING_DESC_F_INDIRECT);
	assert_int_equal(f.desc[0].len, 4 * 16);
	struct vqs_vring_packed_desc *tab = vqs_gmem_host(f.p.gmem, f.desc[0].addr, 64);
	assert_non_null(tab);
	const uint16_t want[4] = {0, 0, VQS_VRING_DESC_F_WRITE, VQS_VRING_DESC_F_WRITE};
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(tab[i].flags, want[i]);
	assert_int_equal(vqs_drv_free_count(f.p.drv), 7);
	struct vqs_elem e = dev_complete(&f, 100);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.in_num, 2);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[0]);
	assert_int_equal(len, 100);
	assert_int_equal(vqs_drv_free_count(f.p.drv), 8);
	fx_fini(&f);
}

/* Free count follows the descriptors; a full ring is -ENOSPC; ids come back for reuse. */
static void driver_free_count_enospc_and_id_reuse(void **state)
{
	struct fx f;
	fx_init(&f, 6, 0);
	add_one(&f, 2, 1, &tok[0], false);
	add_one(&f, 2, 0, &tok[1], false);
	assert_int_equal(vqs_drv_free_count(f.p.drv), 1);
	struct vqs_drv_buf b[2] = {{f.bufs, 8}, {f.bufs + 8, 8}};
	assert_int_equal(vqs_drv_add(f.p.drv, b, 2, 0, &tok[2], false), -ENOSPC);
	assert_int_equal(vqs_drv_add(f.p.drv, b, 1, 0, &tok[2], false), 0);
	assert_int_equal(vqs_drv_add(f.p.drv, b, 1, 0, &tok[3], false), -ENOSPC);
	/* Full, a malformed first chain of a batch is still refused as malformed: no token, or
	 * more than 2^32-1 bytes, of one descriptor and of two. */
	void *no_token = NULL, *token = &tok[3];
	struct vqs_drv_buf big[2] = {{f.bufs, UINT32_MAX}, {f.bufs + 8, 1}};
	for (unsigned total = 1; total <= 2; total++) {
		assert_int_equal(vqs_drv_add_batch(f.p.drv, b, 1, total - 1, &no_token, 1, false),
				 -EINVAL);
		assert_int_equal(vqs_drv_add_batch(f.p.drv, b, 1, total - 1, &token, 1, false),
				 -ENOSPC);
	}
	assert_int_equal(vqs_drv_add_batch(f.p.drv, big, 1, 1, &token, 1, false), -EINVAL);
	vqs_drv_kick_prepare(f.p.drv);
	/* Complete out of order: the second chain first. */
	struct iovec iov[8];
	struct vqs_elem e[3];
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(dev_pop(&f, &e[i], iov + 2 * i + (i ? 1 : 0), 3 - (i ? 1 : 0)), 0);
	uint16_t ids[3] = {e[0].id, e[1].id, e[2].id};
	assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
	assert_int_equal(vqs_vq_fill(f.p.dev, &e[1], 0), 0);
	assert_int_equal(vqs_vq_flush(f.p.dev), 1);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[1]);
	assert_null(vqs_drv_get_used(f.p.drv, &len));
	/* The used descriptor took slot 0 and skipped 2 slots (the second chain's size). */
	assert_int_equal(vqs_drv_free_count(f.p.drv), 2);
	assert_int_equal(vqs_drv_add(f.p.drv, b, 2, 0, &tok[4], false), 0);
	vqs_drv_kick_prepare(f.p.drv);
	struct vqs_elem again;
	assert_int_equal(dev_pop(&f, &again, iov + 6, 2), 0);
	assert_int_equal(again.id, ids[1]); /* the freed id is the one reused */
	fx_fini(&f);
}

static void silent(enum vqs_log_level level, const char *msg, void *opaque) {}

/* A used descriptor with an id not in flight (or out of range) stops the queue instead of
 * crashing or freeing twice. */
static void driver_reports_used_id_not_in_flight(void **state)
{
	const uint16_t bad_ids[2] = {1, 1000};
	vqs_set_log(silent, NULL, VQS_LOG_ERR);
	for (unsigned i = 0; i < 2; i++) {
		struct fx f;
		fx_init(&f, 4, 0);
		add_one(&f, 1, 0, &tok[0], false);
		vqs_drv_kick_prepare(f.p.drv);
		/* Play a broken device: a used descriptor at slot 0 naming another id. */
		f.desc[0].id = bad_ids[i];
		atomic_store_explicit((_Atomic uint16_t *)&f.desc[0].flags,
				      PFX_F_AVAIL | PFX_F_USED, memory_order_release);
		uint32_t len;
		assert_null(vqs_drv_get_used(f.p.drv, &len));
		assert_int_equal(vqs_drv_add(f.p.drv, &(struct vqs_drv_buf){f.bufs, 8}, 1, 0,
					     &tok[1], false),
				 -EIO);
		fx_fini(&f);
	}
	vqs_set_log(NULL, NULL, VQS_LOG_WARN);
}

static void driver_clamps_used_len_above_writable_bytes(void **state)
{
	struct fx f;
	fx_init(&f, 4, 0);
	add_one(&f, 1, 1, &tok[0], false);
	vqs_drv_kick_prepare(f.p.drv);
	dev_complete(&f, 8);
	f.desc[0].len = 1000; /* the device lies after publishing */
	vqs_set_log(silent, NULL, VQS_LOG_WARN);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[0]);
	vqs_set_log(NULL, NULL, VQS_LOG_WARN);
	assert_int_equal(len, 64);
	fx_fini(&f);
}

/* 2.8.10: device event suppression DISABLE: the driver MUST NOT kick; ENABLE: it kicks. */
/* 2.8.7: without WRITE in the used descriptor its len is reserved: the driver reads 0. */
static void driver_ignores_used_len_without_write_flag(void **state)
{
	struct fx f;
	fx_init(&f, 4, 0);
	add_one(&f, 1, 1, &tok[0], false);
	vqs_drv_kick_prepare(f.p.drv);
	dev_complete(&f, 0);
	assert_false(flags_at(&f, 0) & VQS_VRING_DESC_F_WRITE);
	f.desc[0].len = 40;
	uint32_t len = 1;
	assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[0]);
	assert_int_equal(len, 0);
	fx_fini(&f);
}

static void driver_must_not_kick_when_device_disabled_notifications(void **state)
{
	struct fx f;
	fx_init(&f, 8, 0);
	add_one(&f, 1, 0, &tok[0], false);
	assert_true(vqs_drv_kick_prepare(f.p.drv));
	assert_false(vqs_drv_kick_prepare(f.p.drv)); /* nothing new */
	vqs_vq_disable_notify(f.p.dev);
	add_one(&f, 1, 0, &tok[1], false);
	assert_false(vqs_drv_kick_prepare(f.p.drv));
	assert_true(vqs_vq_enable_notify(f.p.dev)); /* the race re-check sees them */
	vqs_vq_enable_notify(f.p.dev);
	add_one(&f, 1, 0, &tok[2], false);
	assert_true(vqs_drv_kick_prepare(f.p.drv));
	fx_fini(&f);
}

/* 2.8.10 with EVENT_IDX: the driver kicks only when its new descriptors pass the device's
 * off_wrap (here: the device's next slot when it enabled notifications). */
static void driver_kicks_only_when_device_event_position_is_passed(void **state)
{
	struct fx f;
	fx_init(&f, 4, F_EVIDX);
	assert_false(vqs_vq_enable_notify(f.p.dev)); /* event at slot 0, wrap 1 */
	add_one(&f, 1, 0, &tok[0], false);
	assert_true(vqs_drv_kick_prepare(f.p.drv));
	add_one(&f, 1, 0, &tok[1], false);
	assert_false(vqs_drv_kick_prepare(f.p.drv)); /* slot 1: the device has not asked again */
	/* The device drains and asks again: event at slot 2. */
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(dev_pop(&f, &e, iov, 1), 0);
	assert_int_equal(dev_pop(&f, &e, iov + 1, 1), 0);
	assert_false(vqs_vq_enable_notify(f.p.dev));
	add_one(&f, 1, 0, &tok[2], false);
	assert_true(vqs_drv_kick_prepare(f.p.drv));
	fx_fini(&f);
}

/* 2.8.10: driver event suppression as written by disable_cb/enable_cb, as the device sees it. */
static void driver_disable_cb_suppresses_device_calls(void **state)
{
	for (int evidx = 0; evidx < 2; evidx++) {
		struct fx f;
		fx_init(&f, 8, evidx ? F_EVIDX : 0);
		vqs_drv_disable_cb(f.p.drv);
		add_one(&f, 1, 0, &tok[0], false);
		vqs_drv_kick_prepare(f.p.drv);
		dev_complete(&f, 0);
		assert_false(vqs_vq_need_call(f.p.dev));
		/* Used while disabled: enable_cb reports it instead of letting the caller sleep. */
		assert_true(vqs_drv_enable_cb(f.p.drv));
		uint32_t len;
		assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[0]);
		assert_false(vqs_drv_enable_cb(f.p.drv));
		add_one(&f, 1, 0, &tok[1], false);
		vqs_drv_kick_prepare(f.p.drv);
		dev_complete(&f, 0);
		assert_true(vqs_vq_need_call(f.p.dev));
		assert_true(vqs_drv_has_used(f.p.drv));
		fx_fini(&f);
	}
}

/* enable_cb_delayed (EVENT_IDX): the call comes once about 3/4 of what is in flight is used. */
static void driver_enable_cb_delayed_waits_for_three_quarters(void **state)
{
	struct fx f;
	fx_init(&f, 8, F_EVIDX);
	for (unsigned i = 0; i < 4; i++)
		add_one(&f, 1, 0, &tok[i], false);
	vqs_drv_kick_prepare(f.p.drv);
	assert_false(vqs_drv_enable_cb_delayed(f.p.drv));
	for (unsigned i = 0; i < 3; i++) {
		dev_complete(&f, 0);
		assert_false(vqs_vq_need_call(f.p.dev));
	}
	dev_complete(&f, 0);
	assert_true(vqs_vq_need_call(f.p.dev));
	fx_fini(&f);
}

/* Many rounds over a ring whose size is not a power of two, with chains of 1-3 descriptors and
 * indirect ones, completed out of order: every token comes back once, with its length. */
static void driver_and_device_wrap_over_many_rounds(void **state)
{
	struct fx f;
	fx_init(&f, 7, F_IND | F_EVIDX);
	static int toks[4096];
	unsigned next = 0, done = 0;
	unsigned char seen[4096] = {0};
	while (done < 4096) {
		while (next < 4096) {
			unsigned shape = next % 5; /* 0-2: direct of 1-3 descriptors, 3-4: indirect */
			unsigned n = shape < 3 ? shape + 1 : 2;
			struct vqs_drv_buf b[3];
			for (unsigned k = 0; k < n; k++)
				b[k] = (struct vqs_drv_buf){f.bufs + 64u * k, 16};
			int rc = vqs_drv_add(f.p.drv, b, n - 1, 1, &toks[next], shape >= 3);
			if (rc == -ENOSPC)
				break;
			assert_int_equal(rc, 0);
			next++;
		}
		vqs_drv_kick_prepare(f.p.drv);
		struct iovec iov[32];
		struct vqs_elem e[8];
		unsigned got = 0;
		while (got < 8 && dev_pop(&f, &e[got], iov + 4 * got, 4) == 0)
			got++;
		for (unsigned i = got; i-- > 0;) /* reverse: out of order */
			assert_int_equal(vqs_vq_fill(f.p.dev, &e[i], i + 1 < 16 ? i + 1 : 16), 0);
		vqs_vq_flush(f.p.dev);
		uint32_t len;
		int *t;
		while ((t = vqs_drv_get_used(f.p.drv, &len))) {
			assert_false(seen[t - toks]);
			seen[t - toks] = 1;
			done++;
		}
		assert_true(got > 0 || done == 4096);
	}
	assert_int_equal(vqs_drv_free_count(f.p.drv), 7);
	assert_false(vqs_vq_is_broken(f.p.dev));
	fx_fini(&f);
}

#define F_INORDER VQS_BIT(VQS_F_IN_ORDER)

/* 2.8.9 (IN_ORDER): the device writes one used descriptor for a run of buffers that report no
 * bytes and the buffer after them, skipping all their slots; the driver completes every buffer
 * up to the id named, in order, the earlier ones with length 0. */
static void in_order_device_batches_used_descriptors_and_driver_completes_all(void **state)
{
	struct fx f;
	fx_init(&f, 8, F_INORDER);
	add_one(&f, 1, 0, &tok[0], false);
	add_one(&f, 2, 0, &tok[1], false);
	add_one(&f, 1, 0, &tok[2], false);
	add_one(&f, 1, 1, &tok[3], false);
	vqs_drv_kick_prepare(f.p.drv);
	struct iovec iov[8];
	struct vqs_elem e[4];
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(dev_pop(&f, &e[i], iov + 2 * i, 2), 0);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(vqs_vq_fill(f.p.dev, &e[i], i == 3 ? 16 : 0), 0);
	assert_int_equal(vqs_vq_flush(f.p.dev), 4);
	/* One used descriptor, at slot 0, naming the last buffer; the rest are skipped. */
	assert_int_equal(f.desc[0].id, e[3].id);
	assert_int_equal(f.desc[0].len, 16);
	assert_int_equal(flags_at(&f, 0), PFX_F_AVAIL | PFX_F_USED | VQS_VRING_DESC_F_WRITE);
	assert_false(flags_at(&f, 2) & PFX_F_USED); /* chain 2's slot still as the driver wrote it */
	struct vqs_vq_state st;
	vqs_vq_get_state(f.p.dev, &st);
	assert_int_equal(st.used_idx, 6);
	for (unsigned i = 0; i < 4; i++) {
		uint32_t len = 99;
		assert_true(vqs_drv_has_used(f.p.drv));
		assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[i]);
		assert_int_equal(len, i == 3 ? 16 : 0);
	}
	assert_false(vqs_drv_has_used(f.p.drv));
	assert_int_equal(vqs_drv_free_count(f.p.drv), 8);
	fx_fini(&f);
}

/* A buffer that reports bytes keeps its own used descriptor: only empty ones are folded. */
static void in_order_device_keeps_used_descriptor_of_buffer_with_bytes(void **state)
{
	struct fx f;
	fx_init(&f, 8, F_INORDER);
	for (unsigned i = 0; i < 3; i++)
		add_one(&f, 1, 1, &tok[i], false);
	vqs_drv_kick_prepare(f.p.drv);
	struct iovec iov[6];
	struct vqs_elem e[3];
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(dev_pop(&f, &e[i], iov + 2 * i, 2), 0);
	const uint32_t written[3] = {8, 0, 0};
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(vqs_vq_fill(f.p.dev, &e[i], written[i]), 0);
	assert_int_equal(vqs_vq_flush(f.p.dev), 3);
	assert_int_equal(f.desc[0].id, e[0].id);
	assert_int_equal(f.desc[2].id, e[2].id); /* e[1] folded into e[2]'s descriptor */
	for (unsigned i = 0; i < 3; i++) {
		uint32_t len;
		assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[i]);
		assert_int_equal(len, written[i]);
	}
	fx_fini(&f);
}

/* IN_ORDER over many rounds of a 5-entry ring: batches of mixed sizes and lengths, flushed at
 * varying points, every token back in order with its length. */
static void in_order_many_rounds_tokens_in_order(void **state)
{
	struct fx f;
	fx_init(&f, 5, F_INORDER | F_EVIDX);
	static int toks[3000];
	unsigned next = 0, done = 0;
	struct iovec iov[20];
	struct vqs_elem e[5];
	while (done < 3000) {
		while (next < 3000) {
			struct vqs_drv_buf b[3] = {{f.bufs, 16}, {f.bufs + 64, 16}, {f.bufs + 128, 16}};
			if (vqs_drv_add(f.p.drv, b, 1 + next % 2, 1, &toks[next], false) == -ENOSPC)
				break;
			next++;
		}
		vqs_drv_kick_prepare(f.p.drv);
		unsigned got = 0;
		while (got < 5 && dev_pop(&f, &e[got], iov + 4 * got, 4) == 0)
			got++;
		for (unsigned i = 0; i < got; i++) {
			uint16_t id = e[i].id;
			assert_int_equal(vqs_vq_fill(f.p.dev, &e[i], id % 3 ? 0 : 1 + id % 16), 0);
			if ((i + done) % 3 == 0)
				vqs_vq_flush(f.p.dev);
		}
		vqs_vq_flush(f.p.dev);
		uint32_t len;
		int *t;
		while ((t = vqs_drv_get_used(f.p.drv, &len)))
			assert_int_equal(t - toks, done++);
		assert_true(got > 0);
	}
	assert_int_equal(vqs_drv_free_count(f.p.drv), 5);
	assert_false(vqs_vq_is_broken(f.p.dev));
	fx_fini(&f);
}

/* The device's used position, as vqs_drv_position reads it from the ring. */
static void expect_position_matches_device(struct fx *f)
{
	struct vqs_drv_pos pos;
	struct vqs_vq_state st;
	assert_int_equal(vqs_drv_position(f->p.drv, &pos), 0);
	vqs_vq_get_state(f->p.dev, &st);
	assert_int_equal(pos.used_idx, st.used_idx);
	assert_int_equal(pos.used_wrap, st.used_wrap);
	assert_int_equal(pos.avail_idx, st.last_avail_idx);
	assert_int_equal(pos.avail_wrap, st.avail_wrap);
}

/* vhost-user reconnect (issue 5): the driver tells where the device stopped using, counting
 * used descriptors it has not consumed yet, completed out of order and across a wrap. */
static void driver_position_counts_used_not_yet_consumed(void **state)
{
	struct fx f;
	fx_init(&f, 8, 0);
	struct iovec iov[8];
	struct vqs_elem e[3];
	uint32_t len;
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 3; i++)
			add_one(&f, 1, round == i, &tok[i], false);
		vqs_drv_kick_prepare(f.p.drv);
		for (unsigned i = 0; i < 3; i++)
			assert_int_equal(dev_pop(&f, &e[i], iov + 2 * i, 2), 0);
		/* Newest first: the used descriptors name chains 2 and 1, chain 0 still out. */
		assert_int_equal(vqs_vq_fill(f.p.dev, &e[2], 0), 0);
		assert_int_equal(vqs_vq_fill(f.p.dev, &e[1], 0), 0);
		assert_int_equal(vqs_vq_flush(f.p.dev), 2);
		expect_position_matches_device(&f);
		assert_non_null(vqs_drv_get_used(f.p.drv, &len));
		expect_position_matches_device(&f);
		assert_int_equal(vqs_vq_fill(f.p.dev, &e[0], 0), 0);
		assert_int_equal(vqs_vq_flush(f.p.dev), 1);
		expect_position_matches_device(&f);
		while (vqs_drv_get_used(f.p.drv, &len))
			;
		expect_position_matches_device(&f);
	}
	fx_fini(&f);
}

/* The same with IN_ORDER: one used descriptor stands for a batch, half of it handed out. */
static void driver_position_skips_in_order_batch_half_consumed(void **state)
{
	struct fx f;
	fx_init(&f, 8, F_INORDER);
	struct iovec iov[8];
	struct vqs_elem e[3];
	uint32_t len;
	for (unsigned round = 0; round < 3; round++) {
		add_one(&f, 1, 0, &tok[0], false);
		add_one(&f, 2, 0, &tok[1], false);
		add_one(&f, 1, 1, &tok[2], false);
		vqs_drv_kick_prepare(f.p.drv);
		for (unsigned i = 0; i < 3; i++)
			assert_int_equal(dev_pop(&f, &e[i], iov + 2 * i, 2), 0);
		for (unsigned i = 0; i < 3; i++)
			assert_int_equal(vqs_vq_fill(f.p.dev, &e[i], 0), 0);
		assert_int_equal(vqs_vq_flush(f.p.dev), 3);
		expect_position_matches_device(&f);
		assert_ptr_equal(vqs_drv_get_used(f.p.drv, &len), &tok[0]);
		expect_position_matches_device(&f);
		while (vqs_drv_get_used(f.p.drv, &len))
			;
		expect_position_matches_device(&f);
	}
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(driver_must_set_avail_used_next_write_flags_and_last_id),
		cmocka_unit_test(driver_must_not_make_head_available_before_the_rest),
		cmocka_unit_test(driver_must_make_descriptors_visible_before_head_flags),
		cmocka_unit_test(driver_must_set_only_write_inside_indirect_table),
		cmocka_unit_test(driver_free_count_enospc_and_id_reuse),
		cmocka_unit_test(driver_reports_used_id_not_in_flight),
		cmocka_unit_test(driver_clamps_used_len_above_writable_bytes),
		cmocka_unit_test(driver_ignores_used_len_without_write_flag),
		cmocka_unit_test(driver_must_not_kick_when_device_disabled_notifications),
		cmocka_unit_test(driver_kicks_only_when_device_event_position_is_passed),
		cmocka_unit_test(driver_disable_cb_suppresses_device_calls),
		cmocka_unit_test(driver_enable_cb_delayed_waits_for_three_quarters),
		cmocka_unit_test(driver_and_device_wrap_over_many_rounds),
		cmocka_unit_test(in_order_device_batches_used_descriptors_and_driver_completes_all),
		cmocka_unit_test(in_order_device_keeps_used_descriptor_of_buffer_with_bytes),
		cmocka_unit_test(in_order_many_rounds_tokens_in_order),
		cmocka_unit_test(driver_position_counts_used_not_yet_consumed),
		cmocka_unit_test(driver_position_skips_in_order_batch_half_consumed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
