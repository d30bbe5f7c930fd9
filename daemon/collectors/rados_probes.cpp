#include "collectors/rados_probes.h"

namespace cephscope::rados {

profile::ProbeSet probe_set() {
  profile::ProbeSet set;
  set.name = "librados";
  set.description = "Client side of an op in a librados process: Objecter submit, send, reply.";
  set.objects = {"librados.so.2", "libceph-common.so.2"};
  set.functions.assign(kFunctions.begin(), kFunctions.end());
  set.types.push_back({"Objecter::Op", {kOpMembers.begin(), kOpMembers.end()}});
  set.digest = profile::probe_set_digest(set);
  return set;
}

}  // namespace cephscope::rados
