// Collectives on a torus fabric (TPU ICI) and across slices (DCN). Derivations (docs/tpu.md):
// * All-gather / reduce-scatter of S bytes (the gathered output per member) over a span of
//   n = prod n_i members: each spanned axis runs a ring; a wrapped axis sends both ways
//   (2 x link rate), a line without its wraparound link only one way in effect (its middle link
//   carries every shard: twice the ring's time). XLA drives all spanned axes at once, so the
//   rates add: T = S (n - 1) / n / sum_i r_i, plus one hop latency per ring step.
// * All-reduce = reduce-scatter + all-gather.
// * All-to-all of S bytes per member: uniform traffic, dimension-ordered; the links of axis i
//   carry n S n_i / 4 byte-hops on a ring (mean distance n_i / 4) over 2 n links, so
//   T_i = S n_i / (8 B) wrapped and S n_i / (4 B) on a line; axes run concurrently: max_i T_i.
// * Multi-slice groups are hierarchical: the DCN leg moves the 1 / n_slice part of the buffer
//   per chip over that chip's DCN share, before (all-gather) or after (reduce-scatter) the ICI
//   leg; an all-reduce reduce-scatters on ICI, all-reduces the shard over DCN, all-gathers.
#include <algorithm>
#include <cmath>

#include "projector/cost/collective.h"

namespace projector {
namespace {

struct TorusRates {
  double link_bw = 0.0;  // bytes/s, one ICI link, one direction, achieved
  double core_bw = 0.0;  // bytes/s between the dies of one chip
  double dcn_bw = 0.0;   // bytes/s per chip over DCN, achieved
  double hop_s = 0.0;
  double base_s = 0.0;
  double dcn_step_s = 0.0;
};

TorusRates rates(const NetworkSpec& net) {
  TorusRates r;
  const double eff = net.ici_bw_eff > 0.0 ? net.ici_bw_eff : net.bw_eff;
  r.link_bw = net.ici_link_bw_gb_per_s * 1e9 * eff;
  r.core_bw =
      (net.core_link_bw_gb_per_s > 0.0 ? net.core_link_bw_gb_per_s : net.ici_link_bw_gb_per_s) *
      1e9 * eff;
  const double dcn_eff = net.dcn_bw_eff > 0.0 ? net.dcn_bw_eff : net.bw_eff;
  double dcn = net.dcn_bw_gb_per_s;
  if (dcn <= 0.0) {
    // Primus keys: pod_bw per NIC, nics_per_node NICs for node_size chips.
    const double nics = net.nics_per_node > 0 ? net.nics_per_node : 1.0;
    const double chips = net.node_size > 0 ? net.node_size : 1.0;
    dcn = net.pod_bw_gb_per_s * nics / chips;
  }
  r.dcn_bw = dcn * 1e9 * dcn_eff;
  r.hop_s = net.ici_hop_lat_us * 1e-6;
  r.base_s = net.ici_base_lat_us * 1e-6;
  r.dcn_step_s = net.dcn_lat_us * 1e-6;
  return r;
}

double axis_bw(const TorusSpan& t, int i, const TorusRates& r) {
  const auto j = static_cast<std::size_t>(i);
  const double link = t.core[j] ? r.core_bw : r.link_bw / std::max(1, t.sharers);
  return (t.wrap[j] && t.extent[j] > 2 ? 2.0 : 1.0) * link;
}

// Ring steps of one pass over every spanned axis (a wrapped ring halves them, both directions).
double ring_steps(const TorusSpan& t) {
  double steps = 0.0;
  for (int i = 0; i < t.axes; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const double n = t.extent[j];
    steps += t.wrap[j] ? std::ceil((n - 1.0) / 2.0) : n - 1.0;
  }
  return steps;
}

// ICI all-gather (or reduce-scatter) of `bytes` of output per member within one slice.
double ici_gather_s(const TorusSpan& t, const TorusRates& r, double bytes) {
  const double n = t.members_per_slice();
  if (n <= 1.0 || bytes <= 0.0) return 0.0;
  double bw = 0.0;
  for (int i = 0; i < t.axes; ++i) bw += axis_bw(t, i, r);
  if (bw <= 0.0) return 0.0;
  return r.base_s + ring_steps(t) * r.hop_s + bytes * (n - 1.0) / n / bw;
}

// ICI all-to-all of `bytes` sent per member within one slice.
double ici_alltoall_s(const TorusSpan& t, const TorusRates& r, double bytes) {
  const double n = t.members_per_slice();
  if (n <= 1.0 || bytes <= 0.0) return 0.0;
  double worst = 0.0;
  for (int i = 0; i < t.axes; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const double ni = t.extent[j];
    if (ni <= 1.0) continue;
    const double link = t.core[j] ? r.core_bw : r.link_bw / std::max(1, t.sharers);
    // A pair (n_i = 2) is a line: half the buffer crosses its one link (S n_i / 4).
    const double per_link = t.wrap[j] && ni > 2.0 ? 8.0 : 4.0;
    worst = std::max(worst, bytes * ni / (per_link * link));
  }
  return r.base_s + ring_steps(t) * r.hop_s + worst;
}

// DCN ring over `slices` of `bytes` per chip (one pass: all-gather or reduce-scatter).
double dcn_pass_s(const TorusRates& r, int slices, double bytes) {
  if (slices <= 1 || bytes <= 0.0 || r.dcn_bw <= 0.0) return 0.0;
  const double s = slices;
  return (s - 1.0) * r.dcn_step_s + bytes * (s - 1.0) / s / r.dcn_bw;
}

}  // namespace

CollectiveEstimate torus_collective_estimate(const NetworkSpec& net, CollectiveKind kind,
                                             double bytes, const CommGroup& group) {
  CollectiveEstimate e;
  e.cost.provenance = Provenance::kRoofline;
  if (bytes <= 0.0) return e;
  const TorusSpan& t = group.torus;
  const TorusRates r = rates(net);
  const double n_slice = std::max(1, t.members_per_slice());
  const int s = std::max(1, t.slices);
  double time = 0.0;
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      // DCN leg on the 1/n_slice part each chip owns, ICI leg on the whole buffer.
      time = dcn_pass_s(r, s, bytes / n_slice) + ici_gather_s(t, r, bytes);
      e.algorithm = s > 1 ? "torus+dcn" : "torus-ring";
      break;
    case CollectiveKind::kAllReduce:
      time = 2.0 * ici_gather_s(t, r, bytes) + 2.0 * dcn_pass_s(r, s, bytes / n_slice);
      e.algorithm = s > 1 ? "torus+dcn" : "torus-ring";
      break;
    case CollectiveKind::kAllToAll: {
      // The part bound for other slices crosses DCN; the rest stays on ICI.
      const double remote = bytes * (s - 1.0) / s;
      time = ici_alltoall_s(t, r, bytes / s) +
             (s > 1 && r.dcn_bw > 0.0 ? (s - 1.0) * r.dcn_step_s + remote / r.dcn_bw : 0.0);
      e.algorithm = s > 1 ? "torus+dcn-a2a" : "torus-a2a";
      break;
    }
    case CollectiveKind::kSendRecv:
      // A neighbour hop on one link, or a chip-to-chip transfer over DCN.
      time = s > 1 ? r.dcn_step_s + bytes / std::max(1.0, r.dcn_bw)
                   : r.base_s + r.hop_s + bytes * std::max(1, t.sharers) / std::max(1.0, r.link_bw);
      e.algorithm = "p2p";
      break;
    case CollectiveKind::kBroadcast:
      time = dcn_pass_s(r, s, bytes) + ici_gather_s(t, r, bytes);
      e.algorithm = "torus-ring";
      break;
  }
  e.protocol = "ici";
  e.cost.time_s = time;
  const double factor = bus_bandwidth_factor(kind, std::max(2, group.size));
  e.cost.bytes = factor * bytes;
  e.bus_bw_bytes_per_s = time > 0.0 ? e.cost.bytes / time : 0.0;
  double raw = 0.0;
  for (int i = 0; i < t.axes; ++i) raw += axis_bw(t, i, r);
  if (raw > 0.0) e.cost.efficiency = e.bus_bw_bytes_per_s / raw;
  return e;
}

}  // namespace projector
