/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: being written (helper owns this file). */
#include "util/common.h"
#include "cmd/cmd.h"

int cmd_collapse(int argc, const char **argv)
{
	(void)argc;
	(void)argv;
	die("collapse: not yet supported");
}
