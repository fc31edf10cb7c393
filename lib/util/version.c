/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <vqsched/common.h>

unsigned vqs_version(void) { return VQS_VERSION_NUM; }

const char *vqs_version_string(void) { return VQS_VERSION_STRING; }

int vqs_version_check(unsigned major, unsigned minor)
{
	/* Within a major version minors only add; a program built against a newer minor may call
	 * functions this library lacks. */
	if (major != VQS_VERSION_MAJOR || minor > VQS_VERSION_MINOR)
		return -ENOTSUP;
	return 0;
}
