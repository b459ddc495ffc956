// Port of Primus' collective model (spec 7.1-7.4). Formulas follow the reference; comments name
// the reference function. Units: bytes, GB/s, µs (bytes / (GB/s) x 1e-3 = µs).
#include "projector/cost/primus_collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace projector::primus {

namespace {

double clog2(double x) {
  return x <= 1.0 ? 0.0 : std::ceil(std::log2(x));
}

struct Adjusted {
  double lat;
  double size;
};

double packet_size(double m, Protocol p) {
  switch (p) {
    case Protocol::kSimple:
      return m + 8.0;
    case Protocol::kLL:
      return std::ceil(m / 4.0) * 8.0;
    case Protocol::kLL64:
      return std::ceil(m / 56.0) * 64.0;
    case Protocol::kLL128:
      return std::ceil(m / 120.0) * 128.0;
  }
  return m;
}

// Intra-node protocol latency and wire size.
Adjusted adj(const CollectiveArgs& a, double m, Protocol p) {
  const NetworkSpec& n = a.net;
  if (p == Protocol::kSimple) {
    return {2.0 * n.write_latency_us + n.write_resp_us + n.hbm_latency_us, m + 8.0};
  }
  return {n.write_latency_us + n.hbm_latency_us, packet_size(m, p)};
}

// Inter-node protocol latency and wire size (pod latency based).
Adjusted adj_inter(const CollectiveArgs& a, double m, Protocol p) {
  const NetworkSpec& n = a.net;
  if (p == Protocol::kSimple)
    return {3.0 * n.pod_lat_us + n.hbm_latency_us, std::max(8.0, m + 8.0)};
  return {n.pod_lat_us + n.hbm_latency_us, packet_size(m, p)};
}

double launch(const CollectiveArgs& a) {
  return a.net.kernel_launch_latency_us;
}
double vf(const CollectiveArgs& a) {
  return a.net.vector_flops;
}
int node_size(const CollectiveArgs& a) {
  return a.net.node_size;
}
int pod_size(const CollectiveArgs& a) {
  return a.net.pod_size;
}
int nics(const CollectiveArgs& a) {
  return a.net.nics_per_node;
}

// Contended per-NIC bandwidth for all-to-all streams (raw x p2p efficiency).
double bw_pod_a2a(const CollectiveArgs& a, double nodes) {
  return a.raw_pod_bw * a.net.p2p_bw_eff *
         std::max(0.0, 1.0 - a.net.a2a_remote_contention * (nodes - 1.0));
}

struct Tier {
  double bw;
  double lat;
};
Tier tier(const CollectiveArgs& a, int n) {
  if (n <= node_size(a)) return {bw_node(a, -1, false), a.net.node_lat_us};
  if (n <= pod_size(a)) return {a.pod_bw, a.net.pod_lat_us};
  return {a.cluster_bw, a.net.cluster_lat_us};
}

}  // namespace

CollectiveArgs make_collective_args(const NetworkSpec& net, int num_nodes, int gpus_per_node,
                                    int tp, int pp, int ep, int cp) {
  CollectiveArgs a;
  a.net = net;
  if (a.net.node_size <= 0) a.net.node_size = gpus_per_node;
  if (a.net.pod_size <= 0) a.net.pod_size = num_nodes * gpus_per_node;
  if (a.net.nics_per_node <= 0) a.net.nics_per_node = gpus_per_node;
  a.raw_node_bw = net.node_bw_gb_per_s;
  a.raw_pod_bw = net.pod_bw_gb_per_s;
  a.node_bw = net.node_bw_gb_per_s * net.bw_eff;
  a.pod_bw = net.pod_bw_gb_per_s * net.bw_eff;
  a.cluster_bw = net.cluster_bw_gb_per_s * net.bw_eff;
  a.num_nodes = num_nodes;
  a.hp = tp;
  a.pp = pp;
  a.ep = ep;
  a.cp = cp;
  a.mesh = net.node_topology == "mesh";
  return a;
}

CollectiveArgs make_collective_args_raw(const NetworkSpec& net, int num_nodes, int tp) {
  CollectiveArgs a =
      make_collective_args(net, num_nodes, net.node_size > 0 ? net.node_size : 8, tp);
  a.node_bw = net.node_bw_gb_per_s;
  a.pod_bw = net.pod_bw_gb_per_s;
  a.cluster_bw = net.cluster_bw_gb_per_s;
  return a;
}

double bw_node(const CollectiveArgs& a, int g, bool a2a) {
  if (g <= 0) g = a.hp;
  const int ns = node_size(a);
  double bw = a.node_bw;
  if (a.mesh && g > 1 && g < ns) bw *= static_cast<double>(g - 1) / (ns - 1);
  if (a2a && a.mesh && g > 1 && ns > 2) {
    const double x = static_cast<double>(g - 1) / (ns - 1);
    bw *= 1.0 - a.net.a2a_mesh_contention * x * x;
  }
  return bw;
}

// sendrecv (PP P2P). No g = 1 shortcut in the reference.
double sendrecv(const CollectiveArgs& a, double m) {
  const int ns = node_size(a);
  double bw;
  double lat;
  if (a.pp > 1 && a.num_nodes > 1 && a.num_nodes * ns / a.pp >= ns) {
    bw = a.raw_pod_bw * a.net.p2p_bw_eff;
    lat = a.net.pod_lat_us;
  } else {
    const int dom = a.hp * a.cp * a.ep;
    if (dom <= ns) {
      bw = a.raw_node_bw * a.net.p2p_bw_eff;
      if (a.mesh) bw /= (ns - 1);
      lat = a.net.node_lat_us;
    } else if (dom <= pod_size(a)) {
      bw = a.pod_bw;
      lat = a.net.pod_lat_us;
    } else {
      bw = a.cluster_bw;
      lat = a.net.cluster_lat_us;
    }
  }
  return m / bw * 1e-3 + lat + launch(a);
}

double direct_alltoall(const CollectiveArgs& a, double ms, int g, Protocol p) {
  const double gpn = node_size(a);
  const double nodes = std::ceil(g / gpn);
  const double intra_frac = (gpn - 1.0) / (g - 1.0);
  const Adjusted ai = adj(a, ms * intra_frac, p);
  const double t_intra = ai.size / bw_node(a, static_cast<int>(gpn), true) * 1e-3 + ai.lat;
  const double bwp = bw_pod_a2a(a, nodes);
  double t_inter;
  if (a.net.switch_topology) {
    t_inter = ms * (1.0 - intra_frac) * gpn / (bwp * nics(a)) * 1e-3 + a.net.pod_lat_us;
  } else {
    t_inter = ms * (1.0 - intra_frac) / bwp * 1e-3 + a.net.pod_lat_us * (nodes - 1.0);
  }
  return std::max(t_intra, t_inter) + 0.5 * a.net.pod_lat_us * (nodes - 1.0) +
         a.net.a2a_peer_lat_us * (g - gpn) + launch(a);
}

double run_alltoall(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  const double ms = std::floor(m * (g - 1) / g);
  if (a.hp * g <= node_size(a)) {
    const Adjusted ad = adj(a, ms, p);
    return ad.size / bw_node(a, g, true) * 1e-3 + ad.lat + launch(a);
  }
  if (a.hp * g <= pod_size(a)) {
    if (a.hp == 1) return direct_alltoall(a, ms, g, p);
    const Adjusted ad = adj_inter(a, ms, p);
    return ad.size / a.pod_bw * 1e-3 + ad.lat + launch(a);
  }
  const Adjusted ad = adj_inter(a, ms, p);
  return ad.size / a.cluster_bw * 1e-3 + ad.lat - a.net.pod_lat_us + a.net.cluster_lat_us +
         launch(a);
}

double single_shot_alltoall(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  const int ns = node_size(a);
  const double peer = std::ceil(m / g);
  const int gpn = std::min(g, std::max(1, ns / a.hp));
  const double inter = std::max(0, g - gpn);
  const Adjusted ad = adj(a, peer, p);
  const double t_intra = std::ceil(static_cast<double>(gpn - 1) / (ns - 1)) * ad.lat +
                         ad.size * (gpn - 1) / bw_node(a, gpn, true) * 1e-3;
  const double nodes = std::ceil(static_cast<double>(g) / ns);
  const double bwp = bw_pod_a2a(a, nodes);
  double t_inter = 0.0;
  if (inter > 0) {
    const bool sw = a.net.switch_topology;
    t_inter = std::ceil(inter / (pod_size(a) - 1)) * a.net.pod_lat_us +
              peer * inter * (sw ? gpn : 1) / (bwp * (sw ? nics(a) : 1)) * 1e-3;
  }
  return std::max(t_intra, t_inter) + launch(a);
}

double hierarchical_alltoall(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  const int gpn = std::min(g, std::max(1, node_size(a) / a.hp));
  const double nodes = std::ceil(static_cast<double>(g) / gpn);
  if (nodes <= 1) return single_shot_alltoall(a, m, g, p);
  const Adjusted ad = adj(a, m * (gpn - 1) / g, p);
  const double t_intra = ad.lat + ad.size / bw_node(a, gpn, true) * 1e-3;
  const double bwp = bw_pod_a2a(a, nodes);
  double t_inter;
  if (a.net.switch_topology) {
    t_inter = a.net.pod_lat_us + m * (g - gpn) / g * gpn / (bwp * nics(a)) * 1e-3;
  } else {
    t_inter = a.net.pod_lat_us * nodes + m * (g - gpn) / g / bwp * 1e-3;
  }
  return std::max(t_intra, t_inter) + launch(a);
}

double cp_allgather(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  const double ms = std::floor(m * (g - 1) / g);
  const Adjusted ad = adj(a, ms, p);
  const Tier t = tier(a, a.cp * a.hp);
  return ad.size / t.bw * 1e-3 + t.lat * clog2(g) + launch(a);
}

namespace {
// run_allgather / run_reduce_scatter share everything but the reduction term.
double bruck(const CollectiveArgs& a, double m, int g, Protocol p, bool reduce) {
  if (g <= 1 || m <= 0) return 0.0;
  const int ns = node_size(a);
  const Adjusted ad = adj(a, std::floor(m * (g - 1) / g), p);
  const double ms = ad.size;
  double t;
  if (g > ns) {
    const double ovl = a.net.ar_overlap_factor *
                       std::min(1.0, (ms * g / (g - 1) / ns) / a.net.ar_warmup_chunk_bytes);
    const double node_vol = ms * (ns - 1) / ns;
    const double t_intra = node_vol / bw_node(a, -1, false) * 1e-3 + ad.lat * clog2(ns);
    const double t_inter =
        (ms - node_vol) / a.pod_bw * 1e-3 + a.net.pod_lat_us * clog2(static_cast<double>(g) / ns);
    t = std::max(t_intra, t_inter) + (1.0 - ovl) * std::min(t_intra, t_inter);
  } else {
    t = ms / bw_node(a, -1, false) * 1e-3 + ad.lat * clog2(g);
  }
  if (reduce) t += (ms / 2.0) / vf(a) * 1e6;
  return t + launch(a);
}

// Ring passes: `passes` traversals, reduction compute when `reduce`.
double ring(const CollectiveArgs& a, double m, int g, Protocol p, int passes, bool reduce) {
  if (g <= 1 || m <= 0) return 0.0;
  const int ns = node_size(a);
  const Adjusted ad = adj(a, std::floor(m * (g - 1) / g), p);
  const double ms = ad.size;
  double one;
  if (g <= ns) {
    one = ad.lat * (g - 1) + ms / bw_node(a, -1, false) * 1e-3;
  } else if (g <= pod_size(a)) {
    one = a.net.pod_lat_us * (g - 1) + ms / std::min(a.node_bw, ns * a.pod_bw) * 1e-3;
  } else {
    one = a.net.cluster_lat_us * (g - 1) + ms / std::min(a.node_bw, ns * a.cluster_bw) * 1e-3;
  }
  double t = one * passes;
  if (reduce) t += (ms * g / 2.0) / vf(a) * 1e6;
  return t + launch(a);
}

double single_shot(const CollectiveArgs& a, double m, int g, Protocol p, bool reduce) {
  if (g <= 1 || m <= 0) return 0.0;
  const int ns = node_size(a);
  const double peer = std::ceil(m / g);
  const int gpn = std::min(g, ns);
  const double inter = g - gpn;
  const Adjusted ad = adj(a, peer, p);
  const double t_intra = std::ceil(static_cast<double>(gpn - 1) / (ns - 1)) * ad.lat +
                         ad.size * (gpn - 1) / bw_node(a, -1, false) * 1e-3;
  double t_inter = 0.0;
  if (inter > 0) {
    t_inter =
        std::ceil(inter / (pod_size(a) - 1)) * a.net.pod_lat_us + peer * inter / a.pod_bw * 1e-3;
  }
  double t = std::max(t_intra, t_inter) + launch(a);
  if (reduce) t += std::ceil(peer * (g - 1) / 2.0) / vf(a) * 1e6;
  return t;
}
}  // namespace

double run_allgather(const CollectiveArgs& a, double m, int g, Protocol p) {
  return bruck(a, m, g, p, false);
}
double run_reduce_scatter(const CollectiveArgs& a, double m, int g, Protocol p) {
  return bruck(a, m, g, p, true);
}
double ring_allreduce(const CollectiveArgs& a, double m, int g, Protocol p) {
  return ring(a, m, g, p, 2, true);
}
double ring_allgather(const CollectiveArgs& a, double m, int g, Protocol p) {
  return ring(a, m, g, p, 1, false);
}
double ring_reduce_scatter(const CollectiveArgs& a, double m, int g, Protocol p) {
  return ring(a, m, g, p, 1, true);
}

double oneshot_hc_allreduce(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  const int ns = node_size(a);
  const Adjusted ad = adj(a, m, p);
  const double ms = ad.size;
  double t;
  if (g > ns) {
    t = ms * (ns - 1) / bw_node(a, -1, false) * 1e-3 + ms * clog2(g - ns) / a.pod_bw * 1e-3 +
        ad.lat * clog2(ns) + a.net.pod_lat_us * clog2(static_cast<double>(g) / ns);
  } else {
    t = ms * (g - 1) / bw_node(a, -1, false) * 1e-3 + ad.lat * clog2(g);
  }
  return t + (ms * g / 2.0) / vf(a) * 1e6 + launch(a);
}

double single_shot_allgather(const CollectiveArgs& a, double m, int g, Protocol p) {
  return single_shot(a, m, g, p, false);
}
double single_shot_reduce_scatter(const CollectiveArgs& a, double m, int g, Protocol p) {
  return single_shot(a, m, g, p, true);
}
double single_shot_allreduce(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  return single_shot_reduce_scatter(a, m, g, p) + single_shot_allgather(a, m, g, p) - launch(a);
}

double hierarchical_allreduce(const CollectiveArgs& a, double m, int g, Protocol p) {
  if (g <= 1 || m <= 0) return 0.0;
  const int ns = node_size(a);
  if (g <= ns) return run_reduce_scatter(a, m, g, p) + run_allgather(a, m, g, p) - launch(a);
  const double nodes = std::ceil(static_cast<double>(g) / ns);
  const Adjusted ad = adj(a, m * (ns - 1) / ns, p);
  const double bwn = bw_node(a, -1, false);
  const double t_rs = ad.size / bwn * 1e-3 + ad.lat * clog2(ns) + (ad.size / 2.0) / vf(a) * 1e6;
  const double inter = (m / ns) * (nodes - 1) / nodes;
  const double bw_i = a.net.switch_topology ? a.pod_bw * nics(a) : a.pod_bw;
  const double t_inter =
      2.0 * (inter / bw_i * 1e-3 + a.net.pod_lat_us * clog2(nodes)) + (inter / 2.0) / vf(a) * 1e6;
  const double t_ag = ad.size / bwn * 1e-3 + ad.lat * clog2(ns);
  const double ovl =
      a.net.ar_overlap_factor * std::min(1.0, (m / ns) / a.net.ar_warmup_chunk_bytes);
  const double intra = t_rs + t_ag;
  return std::max(intra, t_inter) + (1.0 - ovl) * std::min(intra, t_inter) + launch(a);
}

double allreduce(const CollectiveArgs& a, double m, int g) {
  if (g <= 1 || m <= 0) return 0.0;
  double best = std::numeric_limits<double>::infinity();
  for (Protocol p : kProtocols) {
    best = std::min({best, ring_allreduce(a, m, g, p),
                     run_reduce_scatter(a, m, g, p) + run_allgather(a, m, g, p),
                     oneshot_hc_allreduce(a, m, g, p), single_shot_allreduce(a, m, g, p),
                     hierarchical_allreduce(a, m, g, p)});
  }
  double t = best + a.net.rccl_overhead_us;
  const int ns = node_size(a);
  if (g > ns) {
    const double steps = std::max(1.0, clog2(std::floor(static_cast<double>(g) / ns)));
    const double per_nic = m / (nics(a) * steps);
    const double r = std::min(1.0, per_nic / a.net.nic_warmup_bytes);
    if (r < 1.0) t += a.net.nic_rdma_setup_us * steps * (1.0 - std::pow(r, 2.5));
  }
  return t;
}

double alltoall(const CollectiveArgs& a, double m, int g) {
  double best = std::numeric_limits<double>::infinity();
  for (Protocol p : kProtocols) {
    best = std::min({best, run_alltoall(a, m, g, p), single_shot_alltoall(a, m, g, p),
                     hierarchical_alltoall(a, m, g, p)});
  }
  const int ns = node_size(a);
  const int p_in = std::min(g - 1, ns - 1);
  if (p_in > 0) best += a.net.a2a_intra_sync_overhead_us + a.net.a2a_intra_node_peer_lat_us * p_in;
  best += a.net.a2a_peer_lat_us * std::max(0, g - ns);
  return best + a.net.a2a_rccl_overhead_us;
}

double allgather(const CollectiveArgs& a, double m, int g) {
  if (g <= 1 || m <= 0) return 0.0;
  double best = std::numeric_limits<double>::infinity();
  for (Protocol p : kProtocols) {
    best = std::min({best, run_allgather(a, m, g, p), single_shot_allgather(a, m, g, p),
                     ring_allgather(a, m, g, p)});
  }
  return best;
}

double reduce_scatter(const CollectiveArgs& a, double m, int g) {
  if (g <= 1 || m <= 0) return 0.0;
  double best = std::numeric_limits<double>::infinity();
  for (Protocol p : kProtocols) {
    best = std::min({best, run_reduce_scatter(a, m, g, p), ring_reduce_scatter(a, m, g, p),
                     single_shot_reduce_scatter(a, m, g, p)});
  }
  return best;
}

}  // namespace projector::primus
