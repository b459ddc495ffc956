// Communicators of a job laid out on a named device mesh (ParallelSpec::mesh, MaxText's ici_* /
// dcn_* axes). Each group kind is the set of mesh axes that shard what it reduces or exchanges,
// following MaxText's logical axis rules (base.yml logical_axis_rules, docs/maxtext.md):
//   tp / etp       tensor, tensor_sequence          (heads, MLP columns)
//   cp             context
//   dp             data, fsdp, fsdp_transpose, expert (+ other replica axes): the batch axes
//   dp-cp          dp + context
//   pp             stage
//   ep             expert
//   edp            the batch axes except expert, + context: expert weights' data parallelism
//   fsdp-shard     fsdp, fsdp_transpose, context, expert: 'embed' weights are sharded on these
//   expert-shard   fsdp, fsdp_transpose, context: 'embed_moe' expert weights
//   fsdp-replica   data (+ other): replicas of one weight shard
// On a torus the group spans, inside a slice, the physical axes its mesh axes were placed on
// (an axis wraps when the group covers all of it and the accelerator's wraparound rule says so)
// and the slices of its axes' DCN parts. Without a torus (GPUs) its ICI part lies inside a node
// and its DCN part across nodes.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "projector/job/spec.h"
#include "workload/build_detail.h"

namespace projector::workload_detail {
namespace {

bool in(MeshRole r, std::initializer_list<MeshRole> roles) {
  return std::find(roles.begin(), roles.end(), r) != roles.end();
}

bool selected(GroupKind kind, MeshRole r) {
  using R = MeshRole;
  switch (kind) {
    case GroupKind::kTp:
    case GroupKind::kEtp:
      return in(r, {R::kTensor, R::kTensorSequence});
    case GroupKind::kCp:
      return r == R::kContext;
    case GroupKind::kDp:
      return in(r, {R::kData, R::kFsdp, R::kFsdpTranspose, R::kExpert, R::kOther});
    case GroupKind::kDpCp:
      return in(r, {R::kData, R::kFsdp, R::kFsdpTranspose, R::kExpert, R::kOther, R::kContext});
    case GroupKind::kPp:
    case GroupKind::kPpPeer:
      return r == R::kStage;
    case GroupKind::kEp:
      return r == R::kExpert;
    case GroupKind::kEtpEp:
      return in(r, {R::kTensor, R::kTensorSequence, R::kExpert});
    case GroupKind::kEdp:
      return in(r, {R::kData, R::kFsdp, R::kFsdpTranspose, R::kOther, R::kContext});
    case GroupKind::kDpCpShard:
      return in(r, {R::kFsdp, R::kFsdpTranspose, R::kContext, R::kExpert});
    case GroupKind::kEdpShard:
      return in(r, {R::kFsdp, R::kFsdpTranspose, R::kContext});
    case GroupKind::kDpCpReplicate:
      return in(r, {R::kData, R::kOther});
  }
  return false;
}

// Whether a physical axis of `length` chips closes into a ring (AcceleratorSpec torus rules).
bool wraps(const std::string& rule, int length, int pod_edge) {
  if (length < 3) return false;
  if (rule == "always") return true;
  if (rule == "cube_multiples") return length % 4 == 0;
  if (rule == "full_axis") return pod_edge > 0 && length == pod_edge;
  return false;
}

}  // namespace

CommGroup mesh_group(const JobSpec& job, GroupKind kind) {
  const ParallelSpec& p = job.parallel;
  const ClusterSpec& cl = job.cluster;
  CommGroup g;
  g.gpus_per_node = std::max(1, cl.gpus_per_node);
  int ici = 1;
  int dcn = 1;
  // Devices of the group along each physical axis (slice axes, then the core axis).
  const int phys = static_cast<int>(cl.slice_shape.size()) + 1;
  std::vector<int> along(static_cast<std::size_t>(phys), 1);
  bool placed = !cl.slice_shape.empty();
  for (const MeshAxis& a : p.mesh) {
    if (!selected(kind, a.role) || a.size() <= 1) continue;
    ici *= a.ici;
    dcn *= a.dcn;
    if (a.ici > 1 && a.torus_axes.empty()) placed = false;
    for (std::size_t i = 0; i < a.torus_axes.size() && i < a.torus_extent.size(); ++i) {
      const int ax = a.torus_axes[i];
      if (ax >= 0 && ax < phys) along[static_cast<std::size_t>(ax)] *= a.torus_extent[i];
    }
  }
  if (kind == GroupKind::kPpPeer) {  // one neighbouring pair of stages
    ici = std::min(ici, 2);
    dcn = ici > 1 ? 1 : std::min(dcn, 2);
  }
  g.size = ici * dcn;
  if (g.size <= 1) return CommGroup{1, 1, 1, 1, g.gpus_per_node, {}};
  g.ranks_per_node = std::min(ici, g.gpus_per_node);
  g.nodes = std::max(1, g.size / g.ranks_per_node);
  if (!placed) return g;
  // The torus span: one entry per physical axis the group covers.
  const int edge = cl.accelerator.scaleup_domain > 0 && cl.slice_shape.size() == 2
                       ? static_cast<int>(std::lround(std::sqrt(cl.accelerator.scaleup_domain)))
                       : 0;
  TorusSpan& t = g.torus;
  t.slices = dcn;
  t.sharers = std::max(1, cl.devices_per_chip);
  for (int ax = 0; ax < phys && t.axes < TorusSpan::kMaxAxes; ++ax) {
    const int n = along[static_cast<std::size_t>(ax)];
    if (n <= 1) continue;
    const auto j = static_cast<std::size_t>(t.axes);
    const bool core = ax == phys - 1;
    t.extent[j] = n;
    t.core[j] = core;
    t.wrap[j] = !core && n == cl.slice_shape[static_cast<std::size_t>(ax)] &&
                wraps(cl.accelerator.torus_wraparound, n, edge);
    ++t.axes;
  }
  if (kind == GroupKind::kPpPeer && t.axes > 1) t.axes = 1;
  return g;
}

}  // namespace projector::workload_detail
