/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-process member layouts (the osd and rados collectors): a direct-mapped array, slot =
 * tgid modulo its size, holds the layout of the first process of each slot, so a probe's hit
 * costs one inlined array load where a hash lookup cost 100-150 ns per hit in a loaded
 * ceph-osd (tests/bench/osd-build-pair.sh); a process whose slot another holds is found in
 * the hash, which holds every layout (daemon/collectors/layout_table.h). Every layout struct
 * starts with the tgid it belongs to, so a slot is checked without knowing its type.
 */
#ifndef CEPHSCOPE_LAYOUTS_BPF_H
#define CEPHSCOPE_LAYOUTS_BPF_H

#include <bpf/bpf_helpers.h>

static __always_inline void *layout_of(void *slots, void *all, __u32 tgid, __u32 nslots)
{
	__u32 slot = tgid & (nslots - 1);
	__u32 *owner = bpf_map_lookup_elem(slots, &slot);

	if (owner && *owner == tgid)
		return owner;
	return bpf_map_lookup_elem(all, &tgid);
}

#endif
