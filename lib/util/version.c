/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <vqsched/common.h>

unsigned vqs_version(void) { return VQS_VERSION_NUM; }

const char *vqs_version_string(void) { return VQS_VERSION_STRING; }

int vqs_version_check(unsigned major, unsigned minor)
{
	/* Within a major version minors only add; a program built against a newer minor may call
	 * functions this library lacks. Before 1.0 a minor may also remove or reshape (0.2 replaced
	 * the pop variants with the ring session), so a 0.x program needs its own minor. */
	if (major != VQS_VERSION_MAJOR || minor > VQS_VERSION_MINOR)
		return -ENOTSUP;
	if (major == 0 && minor != VQS_VERSION_MINOR)
		return -ENOTSUP;
	return 0;
}
