/* SPDX-License-Identifier: MIT */
/*
 * Device state transfer (issue 20, protocol feature DEVICE_STATE) between the library's frontend
 * and backend: the source device's state saved through a pipe after its queues stopped, loaded
 * into a second backend's device, and service going on there; what arrives is peer-controlled,
 * so a malformed, truncated or oversized state is refused through CHECK_DEVICE_STATE, the
 * device keeps its state and the session goes on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_count.h"
#include "vu_fixture.h"

/* The echo device's state: a header and a body bigger than a pipe holds. */
#define MAGIC 0x76717374u
#define BODY (200u * 1024)
struct state_hdr {
	uint32_t magic;
	uint32_t body_len;
	uint64_t completed;
	uint8_t config[VU_CONFIG_SIZE];
};

struct dev {
	struct vu_echo echo; /* first: the ops' opaque is the echo */
	uint8_t body[BODY];
	unsigned loads;
};

static int save_state(void *opaque, void **blob, size_t *len)
{
	struct dev *d = opaque;
	struct state_hdr h = { MAGIC, BODY, atomic_load(&d->echo.completed), { 0 } };
	memcpy(h.config, d->echo.config, sizeof(h.config));
	uint8_t *b = malloc(sizeof(h) + BODY);
	if (!b)
		return -ENOMEM;
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), d->body, BODY);
	*blob = b;
	*len = sizeof(h) + BODY;
	return 0;
}

/* Everything checked before anything is taken. */
static int load_state(void *opaque, const void *blob, size_t len)
{
	struct dev *d = opaque;
	struct state_hdr h;
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, blob, sizeof(h));
	if (h.magic != MAGIC || h.body_len != BODY || len != sizeof(h) + BODY)
		return -EINVAL;
	atomic_store(&d->echo.completed, h.completed);
	memcpy(d->echo.config, h.config, sizeof(h.config));
	memcpy(d->body, (const uint8_t *)blob + sizeof(h), BODY);
	d->loads++;
	return 0;
}

static struct dev src, dst;

/* A backend serving d on env's scheduler and socket path. */
static void serve(struct vu_env *env, struct dev *d)
{
	vu_echo_init(&d->echo, 1, VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX));
	d->echo.ops.save_state = save_state;
	d->echo.ops.load_state = load_state;
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = env->path;
	bo.sched = env->sched;
	bo.ops = &d->echo.ops;
	bo.opaque = d;
	bo.msg_timeout_ms = 300;
	assert_int_equal(vqs_vu_backend_create(&env->backend, &bo), 0);
}

static struct vqs_vu_frontend *connected(struct vu_env *env)
{
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(env, &o);
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	return f;
}

static void test_device_state_round_trip(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	vqs_vu_backend_destroy(env.backend); /* the fixture's echo has no state hooks */
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	serve(&env, &src);
	for (unsigned i = 0; i < BODY; i++)
		src.body[i] = (uint8_t)(i * 13 + 7);
	src.echo.config[3] = 0xee;
	struct vqs_vu_frontend *f = connected(&env);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_true(vqs_vu_frontend_protocol_features(f) &
		    VQS_BIT(VQS_VU_PROTOCOL_F_DEVICE_STATE));
	assert_int_equal(vu_echo_roundtrip(f, 0, 37, 64), 0);

	/* Saving needs the device stopped. */
	void *blob;
	size_t len;
	assert_int_equal(vqs_vu_frontend_save_state(f, &blob, &len), -ECONNRESET);
	vqs_vu_frontend_destroy(f);
	f = connected(&env);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 37, 64), 0);
	assert_int_equal(vqs_vu_frontend_stop(f), 0);
	assert_int_equal(vqs_vu_frontend_save_state(f, &blob, &len), 0);
	assert_int_equal(len, sizeof(struct state_hdr) + BODY);
	assert_int_equal(vqs_vu_frontend_disconnect(f, true), 0);

	/* The destination loads it, then serves the queues from where they stopped. */
	vqs_vu_backend_destroy(env.backend);
	serve(&env, &dst);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_negotiate(f), 0);
	assert_int_equal(vqs_vu_frontend_load_state(f, blob, len), 0);
	assert_int_equal(dst.loads, 1);
	assert_memory_equal(dst.body, src.body, BODY);
	assert_int_equal(dst.echo.config[3], 0xee);
	assert_int_equal(atomic_load(&dst.echo.completed), 74);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	assert_int_equal(atomic_load(&dst.echo.completed), 84);

	/* Hostile states: garbage, truncated, one byte too many, over the size cap. Each is
	 * refused by CHECK_DEVICE_STATE, the device keeps what it had, the session goes on, and
	 * no fd is left behind. */
	unsigned fds0 = vqs_test_count_fds();
	assert_int_equal(vqs_vu_frontend_stop(f), 0);
	uint8_t *bad = malloc(VQS_VU_DEVICE_STATE_MAX + 4096);
	assert_non_null(bad);
	memset(bad, 0xa5, VQS_VU_DEVICE_STATE_MAX + 4096);
	assert_int_equal(vqs_vu_frontend_load_state(f, bad, 1000), -EIO);
	assert_int_equal(vqs_vu_frontend_load_state(f, blob, len - 1), -EIO);
	memcpy(bad, blob, len);
	assert_int_equal(vqs_vu_frontend_load_state(f, bad, len + 1), -EIO);
	assert_int_equal(vqs_vu_frontend_load_state(f, bad, VQS_VU_DEVICE_STATE_MAX + 4096), -EIO);
	assert_int_equal(vqs_vu_frontend_load_state(f, NULL, 0), -EIO);
	assert_int_equal(dst.loads, 1);
	assert_int_equal(atomic_load(&dst.echo.completed), 84);
	free(bad);
	free(blob);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	assert_int_equal(vu_wait_fds(fds0), fds0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

static void no_state_hooks(struct vqs_vu_device_ops *ops)
{
	ops->save_state = NULL;
	ops->load_state = NULL;
}

/* A backend whose device has no hooks does not offer the feature. */
static void test_device_state_not_offered_without_hooks(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start_with(&env, 1, false, no_state_hooks), 0);
	struct vqs_vu_frontend *f = connected(&env);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_false(vqs_vu_frontend_protocol_features(f) &
		     VQS_BIT(VQS_VU_PROTOCOL_F_DEVICE_STATE));
	void *blob;
	size_t len;
	assert_int_equal(vqs_vu_frontend_save_state(f, &blob, &len), -ENOTSUP);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

/* A frontend that closes its end while the backend saves into it, and one that checks with no
 * transfer: failures CHECK_DEVICE_STATE reports; the backend lives on and serves. */
static void test_device_state_channel_closed_early(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend *f = connected(&env);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vqs_vu_frontend_stop(f), 0);
	uint64_t v = 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_CHECK_DEVICE_STATE, NULL, 0, NULL, 0,
						 false, &v, 8, NULL),
			 8);
	assert_int_not_equal(v, 0);
	for (int round = 0; round < 2; round++) {
		int p[2];
		assert_int_equal(pipe(p), 0);
		close(p[0]); /* nobody will ever read what the backend writes */
		struct vqs_vu_device_state ds = { VQS_VU_STATE_SAVE, VQS_VU_STATE_PHASE_STOPPED };
		assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_DEVICE_STATE_FD, &ds,
							 sizeof(ds), &p[1], 1, false, &v, 8, NULL),
				 8);
		close(p[1]);
		assert_int_equal(v, VQS_VU_STATE_NO_FD);
		assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_CHECK_DEVICE_STATE, NULL, 0,
							 NULL, 0, false, &v, 8, NULL),
				 8);
		assert_int_equal(v, EPIPE);
	}
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_state_round_trip),
		cmocka_unit_test(test_device_state_channel_closed_early),
		cmocka_unit_test(test_device_state_not_offered_without_hooks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
