#include "projector/cost/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace projector {

namespace {

double clog2(double x) {
  return x <= 1.0 ? 0.0 : std::ceil(std::log2(x));
}

struct Proto {
  std::string_view name;
  double bw_fraction;  // payload / wire bytes
  double step_s;       // per scale-up step
};

// Everything the formulas need, resolved once per call (units: seconds, bytes/s).
struct Fabric {
  double up_bw = 0.0;       // per-GPU scale-up bandwidth available to this group's ring
  double up_p2p_bw = 0.0;   // one peer over the scale-up fabric
  double out_bw_gpu = 0.0;  // per-GPU scale-out (NIC share), achieved
  double out_p2p_bw = 0.0;  // one GPU to a remote GPU
  double out_step_s = 0.0;
  double base_s = 0.0;
  double out_base_s = 0.0;
  double nvls_bw = 0.0;  // algbw of in-switch all-reduce (0: none)
  double raw_up_bw = 0.0;
  double raw_out_gpu = 0.0;
  double nics_per_gpu = 1.0;
  Proto protos[3];
  int n_protos = 0;
};

Fabric resolve(const NetworkSpec& net, const CommGroup& g) {
  Fabric f;
  const int gpn = std::max(1, g.gpus_per_node);
  const bool mesh = net.node_topology == "mesh";
  const double up_eff = net.scaleup_bw_eff > 0.0 ? net.scaleup_bw_eff : net.bw_eff;
  const double out_eff = net.scaleout_bw_eff > 0.0 ? net.scaleout_bw_eff : net.bw_eff;
  const int k = std::max(1, g.ranks_per_node);
  f.raw_up_bw = net.node_bw_gb_per_s * 1e9;
  f.up_bw = f.raw_up_bw * up_eff;
  // A full xGMI mesh gives each GPU one link per peer: a group with k < gpn members per node can
  // use only k - 1 of the gpn - 1 links.
  if (mesh && gpn > 1 && k < gpn) f.up_bw *= static_cast<double>(k - 1) / (gpn - 1);
  f.up_p2p_bw = net.node_bw_gb_per_s * 1e9 * net.p2p_bw_eff;
  if (mesh && gpn > 1) f.up_p2p_bw /= (gpn - 1);
  const int nics = net.nics_per_node > 0 ? net.nics_per_node : gpn;
  f.nics_per_gpu = static_cast<double>(nics) / gpn;
  const double out_raw = (g.pods > 1 ? net.cluster_bw_gb_per_s : net.pod_bw_gb_per_s) * 1e9;
  f.raw_out_gpu = out_raw * f.nics_per_gpu;
  f.out_bw_gpu = f.raw_out_gpu * out_eff;
  f.out_p2p_bw = f.raw_out_gpu * net.p2p_bw_eff;
  const double out_step_us = net.scaleout_step_lat_us > 0.0
                                 ? net.scaleout_step_lat_us
                                 : (g.pods > 1 ? net.cluster_lat_us : net.pod_lat_us);
  f.out_step_s = out_step_us * 1e-6;
  f.base_s = net.coll_base_lat_us * 1e-6;
  f.out_base_s = net.scaleout_base_lat_us * 1e-6;
  if (net.nvls_algbw_eff > 0.0 && !mesh) f.nvls_bw = f.raw_up_bw * net.nvls_algbw_eff;
  f.protos[f.n_protos++] = {"LL", 0.5, net.ll_step_lat_us * 1e-6};
  if (net.ll128_enabled)
    f.protos[f.n_protos++] = {"LL128", 120.0 / 128.0, net.ll128_step_lat_us * 1e-6};
  f.protos[f.n_protos++] = {"Simple", 1.0, net.simple_step_lat_us * 1e-6};
  return f;
}

// Primus' small-message RDMA penalty (spec 7.4): below nic_warmup_bytes per NIC per step the
// NICs do not reach their bandwidth; charged per inter-node step.
double nic_warmup_s(const NetworkSpec& net, const Fabric& f, double m, const CommGroup& g) {
  if (g.nodes <= 1 || net.nic_rdma_setup_us <= 0.0 || net.nic_warmup_bytes <= 0.0) return 0.0;
  const double steps = std::max(1.0, clog2(g.nodes));
  const double nics = std::max(1.0, g.ranks_per_node * f.nics_per_gpu);
  const double r = std::min(1.0, m / (nics * steps) / net.nic_warmup_bytes);
  return net.nic_rdma_setup_us * 1e-6 * steps * (1.0 - std::pow(r, 2.5));
}

struct Best {
  double t = std::numeric_limits<double>::infinity();
  std::string_view algorithm;
  std::string_view protocol;
  void offer(double time, std::string_view alg, std::string_view proto) {
    if (time < t) {
      t = time;
      algorithm = alg;
      protocol = proto;
    }
  }
};

double pipelined(double a, double b, double overlap) {
  return std::max(a, b) + (1.0 - overlap) * std::min(a, b);
}

// Reduce-type collectives: all-reduce (passes = 2) or AG/RS (passes = 1) on n ranks.
Best ring_family(const NetworkSpec& net, const Fabric& f, double m, const CommGroup& g,
                 int passes) {
  Best best;
  const double n = g.size;
  const double k = std::max(1, g.ranks_per_node);
  const double nodes = std::max(1, g.nodes);
  const double ovl = std::clamp(net.hier_overlap, 0.0, 1.0);
  for (int i = 0; i < f.n_protos; ++i) {
    const Proto& p = f.protos[i];
    if (nodes <= 1) {
      best.offer(f.base_s + passes * (n - 1) * p.step_s +
                     passes * (n - 1) / n * m / (f.up_bw * p.bw_fraction),
                 "ring", p.name);
      continue;
    }
    const double warm = nic_warmup_s(net, f, m, g);
    const double fixed = f.base_s + f.out_base_s + warm;
    // Hierarchical: intra-node ring legs on k ranks, inter-node exchange of the 1/k chunk over
    // each GPU's own NIC(s) (rail-aligned), legs pipelined.
    const double intra =
        k > 1 ? passes * ((k - 1) * p.step_s + (k - 1) / k * m / (f.up_bw * p.bw_fraction)) : 0.0;
    // The inter-node leg carries Simple-protocol bulk data; LL framing still halves payload.
    const double chunk = m / k;
    const double out_bw = f.out_bw_gpu * p.bw_fraction;
    const double ring_inter =
        passes * ((nodes - 1) * f.out_step_s + (nodes - 1) / nodes * chunk / out_bw);
    const double tree_inter = passes * (clog2(nodes) * f.out_step_s + chunk / out_bw);
    // Pipelining needs chunks: overlap ramps up to hier_overlap once each rank's chunk reaches
    // ar_warmup_chunk_bytes (Primus' hierarchical model, spec 7.3).
    const double ramp =
        net.ar_warmup_chunk_bytes > 0.0 ? std::min(1.0, chunk / net.ar_warmup_chunk_bytes) : 1.0;
    best.offer(fixed + pipelined(intra, ring_inter, ovl * ramp), "hierarchical-ring", p.name);
    if (passes == 2) {
      best.offer(fixed + pipelined(intra, tree_inter, ovl * ramp), "hierarchical-tree", p.name);
    }
    // Flat ring over all ranks: each node's boundary hops use the group's NICs on that node.
    const double flat_bw = std::min(k > 1 ? f.up_bw : 1e30, k * f.out_bw_gpu) * p.bw_fraction;
    best.offer(fixed + passes * ((n - nodes) * p.step_s + nodes * f.out_step_s) +
                   passes * (n - 1) / n * m / flat_bw,
               "ring", p.name);
  }
  return best;
}

Best nvls_allreduce(const Fabric& f, double m, const CommGroup& g, const NetworkSpec& net) {
  Best best;
  if (f.nvls_bw <= 0.0 || g.nodes > 1 || g.size <= 2) return best;
  // One multimem reduce + broadcast pass; its fixed cost grows with the ranks like a ring step.
  best.offer(f.base_s + (g.size - 1) * net.simple_step_lat_us * 1e-6 + m / f.nvls_bw, "nvls",
             "Simple");
  return best;
}

// GPU-initiated all-to-all: the kernel's blocks store to every peer concurrently (P2P over the
// scale-up links, RDMA writes from the GPU over the NICs), one fixed latency per tier and each
// tier's share of the bytes at its bandwidth; the two tiers run at once.
Best gpu_initiated_alltoall(const Fabric& f, double m, const CommGroup& g) {
  Best best;
  const double n = g.size;
  const double k = std::max(1, g.ranks_per_node);
  const double nodes = std::max(1, g.nodes);
  const double intra = k > 1 ? (k - 1) / n * m / f.up_bw : 0.0;
  if (nodes <= 1) {
    best.offer(f.base_s + intra, "gpu-initiated", "direct");
    return best;
  }
  const double inter = f.out_step_s + (n - k) / n * m / f.out_bw_gpu;
  best.offer(f.base_s + f.out_base_s + std::max(intra, inter), "gpu-initiated", "direct");
  return best;
}

Best alltoall(const NetworkSpec& net, const Fabric& f, double m, const CommGroup& g) {
  Best best;
  const double n = g.size;
  const double k = std::max(1, g.ranks_per_node);
  const double nodes = std::max(1, g.nodes);
  // Remote streams share the NICs with more peers as the group spans more nodes; a
  // node-aggregating kernel keeps one stream per node pair (DeepEP's and HybridEP's internode
  // bandwidth is flat from 4 to 8 nodes: data/kernels/ep_dispatch.yaml).
  const double contention =
      g.node_aggregated ? 1.0 : std::max(0.5, 1.0 - net.a2a_remote_contention * (nodes - 1.0));
  const double remote_peers = g.node_aggregated ? nodes - 1.0 : n - k;
  if (g.gpu_initiated) return gpu_initiated_alltoall(f, m, g);
  for (int i = 0; i < f.n_protos; ++i) {
    const Proto& p = f.protos[i];
    const double intra_bytes =
        g.node_forward_ratio > 0.0 ? g.node_forward_ratio * m : (k - 1) / n * m;
    const double intra = k > 1 ? (k - 1) * p.step_s + intra_bytes / (f.up_bw * p.bw_fraction) : 0.0;
    if (nodes <= 1) {
      best.offer(f.base_s + intra, "direct", p.name);
      continue;
    }
    const double inter = remote_peers * net.a2a_peer_lat_us * 1e-6 + f.out_step_s +
                         (n - k) / n * m / (f.out_bw_gpu * contention * p.bw_fraction);
    best.offer(f.base_s + f.out_base_s + std::max(intra, inter), "direct", p.name);
  }
  return best;
}

Best sendrecv(const Fabric& f, double m, const CommGroup& g) {
  Best best;
  const bool same_node = g.ranks_per_node >= 2 && g.nodes <= 1;
  for (int i = 0; i < f.n_protos; ++i) {
    const Proto& p = f.protos[i];
    if (same_node) {
      best.offer(f.base_s + p.step_s + m / (f.up_p2p_bw * p.bw_fraction), "p2p", p.name);
    } else {
      best.offer(f.base_s + f.out_base_s + f.out_step_s + m / (f.out_p2p_bw * p.bw_fraction), "p2p",
                 p.name);
    }
  }
  return best;
}

Best broadcast(const NetworkSpec& net, const Fabric& f, double m, const CommGroup& g) {
  Best best;
  const double n = g.size;
  const double k = std::max(1, g.ranks_per_node);
  const double nodes = std::max(1, g.nodes);
  for (int i = 0; i < f.n_protos; ++i) {
    const Proto& p = f.protos[i];
    const double bw =
        (nodes > 1 ? std::min(k > 1 ? f.up_bw : 1e30, k * f.out_bw_gpu) : f.up_bw) * p.bw_fraction;
    const double fixed = f.base_s + (nodes > 1 ? f.out_base_s + nic_warmup_s(net, f, m, g) : 0.0);
    best.offer(fixed + (n - nodes) * p.step_s + (nodes - 1) * f.out_step_s + m / bw, "ring",
               p.name);
  }
  return best;
}

}  // namespace

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kSendRecv:
      return "send-recv";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "?";
}

std::string_view to_string(GroupKind k) {
  switch (k) {
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kCp:
      return "cp";
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kDpCp:
      return "dp-cp";
    case GroupKind::kPp:
      return "pp";
    case GroupKind::kPpPeer:
      return "pp-peer";
    case GroupKind::kEtp:
      return "etp";
    case GroupKind::kEp:
      return "ep";
    case GroupKind::kEdp:
      return "edp";
    case GroupKind::kEtpEp:
      return "etp_ep";
    case GroupKind::kDpCpShard:
      return "dp-cp-shard";
    case GroupKind::kEdpShard:
      return "edp-shard";
    case GroupKind::kDpCpReplicate:
      return "dp-replicate";
  }
  return "?";
}

int collective_node_gpus(const AcceleratorSpec& acc, const NetworkSpec& net, int gpus_per_node) {
  const int gpn = std::max(1, gpus_per_node);
  // Only a domain the part's own hosts are smaller than spans hosts (an MI300X job on nodes of 4
  // GPUs has two separate 4-GPU groups, not one xGMI domain of 8).
  const bool multi_host = acc.scaleup_domain > acc.default_gpus_per_node;
  if (acc.torus_dims > 0 || !multi_host || acc.scaleup_domain <= gpn || net.node_size <= gpn ||
      net.node_size % gpn != 0) {
    return gpn;
  }
  return std::min(acc.scaleup_domain, net.node_size);
}

CommGroup make_group(int size, int stride, int gpus_per_node, int pod_size_gpus) {
  CommGroup g;
  g.gpus_per_node = std::max(1, gpus_per_node);
  g.size = std::max(1, size);
  stride = std::max(1, stride);
  if (g.size == 1) return g;
  const int gpn = g.gpus_per_node;
  if (stride >= gpn) {
    g.ranks_per_node = 1;
  } else {
    g.ranks_per_node = std::min(g.size, (gpn + stride - 1) / stride);
  }
  g.nodes = (g.size + g.ranks_per_node - 1) / g.ranks_per_node;
  if (pod_size_gpus > 0) {
    const double span = static_cast<double>(g.size - 1) * stride + 1.0;
    g.pods = std::max(1, static_cast<int>(std::ceil(span / pod_size_gpus)));
  }
  return g;
}

CommGroup make_group(GroupKind kind, const ParallelSizes& p, int gpus_per_node, int pod_size_gpus) {
  const int etp = p.etp > 0 ? p.etp : p.tp;
  const int dense = p.tp * p.cp * p.dp;
  const int rep = std::max(1, p.dp_replicate);
  int size = 1;
  int stride = 1;
  switch (kind) {
    case GroupKind::kTp:
      size = p.tp;
      break;
    case GroupKind::kCp:
      size = p.cp;
      stride = p.tp;
      break;
    case GroupKind::kDp:
      size = p.dp;
      stride = p.tp * p.cp;
      break;
    case GroupKind::kDpCp:
      size = p.dp * p.cp;
      stride = p.tp;
      break;
    case GroupKind::kPp:
      size = p.pp;
      stride = dense;
      break;
    case GroupKind::kPpPeer:
      size = p.pp > 1 ? 2 : 1;
      stride = dense;
      break;
    case GroupKind::kEtp:
      size = etp;
      break;
    case GroupKind::kEp:
      size = p.ep;
      stride = etp;
      break;
    case GroupKind::kEdp:
      size = std::max(1, dense / std::max(1, etp * p.ep));
      stride = etp * p.ep;
      break;
    case GroupKind::kEtpEp:
      size = etp * p.ep;
      break;
    case GroupKind::kDpCpShard:
      size = std::max(1, p.dp * p.cp / rep);
      stride = p.tp;
      break;
    case GroupKind::kEdpShard:
      size = std::max(1, dense / std::max(1, etp * p.ep * rep));
      stride = etp * p.ep;
      break;
    case GroupKind::kDpCpReplicate:
      size = rep;
      stride = dense / rep;
      break;
  }
  return make_group(size, stride, gpus_per_node, pod_size_gpus);
}

double bus_bandwidth_factor(CollectiveKind kind, int n) {
  if (n <= 1) return 0.0;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case CollectiveKind::kSendRecv:
    case CollectiveKind::kBroadcast:
      return 1.0;
  }
  return 1.0;
}

CollectiveEstimate collective_estimate(const NetworkSpec& net, CollectiveKind kind, double bytes,
                                       const CommGroup& group) {
  CollectiveEstimate e;
  e.cost.provenance = Provenance::kRoofline;
  if (bytes <= 0.0) return e;
  if (group.size <= 1 && kind != CollectiveKind::kSendRecv) return e;
  if (group.torus.placed() && net.ici_link_bw_gb_per_s > 0.0) {
    return torus_collective_estimate(net, kind, bytes, group);
  }
  const Fabric f = resolve(net, group);
  Best b;
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      b = ring_family(net, f, bytes, group, 2);
      const Best nv = nvls_allreduce(f, bytes, group, net);
      if (nv.t < b.t) b = nv;
      break;
    }
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      b = ring_family(net, f, bytes, group, 1);
      break;
    case CollectiveKind::kAllToAll:
      b = alltoall(net, f, bytes, group);
      break;
    case CollectiveKind::kSendRecv:
      b = sendrecv(f, bytes, group);
      break;
    case CollectiveKind::kBroadcast:
      b = broadcast(net, f, bytes, group);
      break;
  }
  e.cost.time_s = b.t;
  e.algorithm = b.algorithm;
  e.protocol = b.protocol;
  const double factor = bus_bandwidth_factor(kind, std::max(2, group.size));
  e.cost.bytes = factor * bytes;
  e.bus_bw_bytes_per_s = b.t > 0.0 ? e.cost.bytes / b.t : 0.0;
  const double link = group.nodes > 1
                          ? std::min(f.raw_up_bw, group.ranks_per_node * f.raw_out_gpu) /
                                (group.ranks_per_node > 1 ? 1.0 : 1.0)
                          : f.raw_up_bw;
  if (link > 0.0) e.cost.efficiency = e.bus_bw_bytes_per_s / link;
  return e;
}

}  // namespace projector
