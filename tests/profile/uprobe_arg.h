/* Shared between uprobe_arg.bpf.c and its test: where the argument is. */
#ifndef CEPHSCOPE_TESTS_UPROBE_ARG_H
#define CEPHSCOPE_TESTS_UPROBE_ARG_H

enum arg_kind {
	ARG_REGISTER = 0,
	ARG_MEMORY = 1,
};

#endif
