/* SPDX-License-Identifier: MIT */
/* Version checks and the logging hook, as a program linked against the library sees them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <vqsched/vqsched.h>

static void version_matches_headers(void **state)
{
	assert_int_equal(vqs_version(), VQS_VERSION_NUM);
	assert_string_equal(vqs_version_string(), VQS_VERSION_STRING);
	char want[32];
	snprintf(want, sizeof(want), "%d.%d.%d", VQS_VERSION_MAJOR, VQS_VERSION_MINOR,
		 VQS_VERSION_PATCH);
	assert_string_equal(vqs_version_string(), want);
	assert_int_equal(VQS_VERSION_NUM >> 16, VQS_VERSION_MAJOR);
}

static void version_check_same_major_and_older_minor_only(void **state)
{
	assert_int_equal(VQS_CHECK_VERSION(), 0);
	assert_int_equal(vqs_version_check(VQS_VERSION_MAJOR, 0),
			 VQS_VERSION_MAJOR == 0 && VQS_VERSION_MINOR != 0 ? -ENOTSUP : 0);
	assert_int_equal(vqs_version_check(VQS_VERSION_MAJOR, VQS_VERSION_MINOR + 1), -ENOTSUP);
	assert_int_equal(vqs_version_check(VQS_VERSION_MAJOR + 1, 0), -ENOTSUP);
	if (VQS_VERSION_MAJOR > 0)
		assert_int_equal(vqs_version_check(VQS_VERSION_MAJOR - 1, VQS_VERSION_MINOR),
				 -ENOTSUP);
}

/* Before 1.0 a minor may break the API: a program built against 0.1 (the pop variants this
 * minor removed) must not pass the check on 0.2. */
static void version_check_zero_major_needs_the_same_minor(void **state)
{
	if (VQS_VERSION_MAJOR != 0 || VQS_VERSION_MINOR == 0)
		skip();
	assert_int_equal(vqs_version_check(0, VQS_VERSION_MINOR - 1), -ENOTSUP);
	assert_int_equal(vqs_version_check(0, VQS_VERSION_MINOR), 0);
}

struct captured {
	int calls;
	enum vqs_log_level level;
	char msg[512];
};

static void capture(enum vqs_log_level level, const char *msg, void *opaque)
{
	struct captured *c = opaque;
	c->calls++;
	c->level = level;
	snprintf(c->msg, sizeof(c->msg), "%s", msg);
}

/* Something the library reports at INFO: a memory table it refuses. */
static void provoke_info_message(void)
{
	static uint8_t host[64];
	struct vqs_mem_region r = {.gpa = 0x1000, .size = 0, .uaddr = 0x1000, .host = host};
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	assert_int_equal(vqs_mem_set(m, &r, 1), -EINVAL);
	vqs_mem_destroy(m);
}

static void log_hook_receives_messages_up_to_its_level(void **state)
{
	struct captured c = {0};
	vqs_set_log(capture, &c, VQS_LOG_INFO);
	provoke_info_message();
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.level, VQS_LOG_INFO);
	assert_non_null(strstr(c.msg, "size 0"));
	assert_non_null(strstr(c.msg, "0x1000"));

	vqs_set_log(capture, &c, VQS_LOG_DEBUG);
	provoke_info_message();
	assert_int_equal(c.calls, 2);

	/* Above the hook's level: dropped before it reaches the hook. */
	vqs_set_log(capture, &c, VQS_LOG_WARN);
	provoke_info_message();
	assert_int_equal(c.calls, 2);

	/* NULL restores the default (stderr, WARN): the old hook hears nothing more. */
	vqs_set_log(capture, &c, VQS_LOG_DEBUG);
	vqs_set_log(NULL, NULL, VQS_LOG_DEBUG);
	provoke_info_message();
	assert_int_equal(c.calls, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(version_matches_headers),
		cmocka_unit_test(version_check_same_major_and_older_minor_only),
		cmocka_unit_test(version_check_zero_major_needs_the_same_minor),
		cmocka_unit_test(log_hook_receives_messages_up_to_its_level),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
