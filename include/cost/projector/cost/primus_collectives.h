// A faithful port of Primus' analytical collective model (collective_args.py /
// collective_model.py, spec sections 7.1-7.4): the peer baseline `projector kernels` prices every
// collective row with beside projector's own model (kernels/price.cpp), checked against the
// reference's golden values. Times are in
// microseconds like the reference. projector's own model is cost/collective.h.
#pragma once

#include "projector/hardware/hardware.h"

namespace projector::primus {

enum class Protocol { kSimple, kLL, kLL64, kLL128 };
inline constexpr Protocol kProtocols[] = {Protocol::kSimple, Protocol::kLL, Protocol::kLL64,
                                          Protocol::kLL128};

// CollectiveArgs after construction: node/pod/cluster bandwidths already multiplied by bw_eff.
struct CollectiveArgs {
  NetworkSpec net;  // with node_size / pod_size / nics_per_node resolved
  double node_bw = 0.0, pod_bw = 0.0, cluster_bw = 0.0;  // GB/s x bw_eff
  double raw_node_bw = 0.0, raw_pod_bw = 0.0;
  int num_nodes = 1;
  int hp = 1, pp = 1, cp = 1, ep = 1;
  bool mesh = false;
};

// get_default_args: node_size 0 -> gpus_per_node, pod_size 0 -> num_nodes x gpus_per_node,
// nics_per_node 0 -> gpus_per_node; then bandwidths x bw_eff.
CollectiveArgs make_collective_args(const NetworkSpec& net, int num_nodes, int gpus_per_node,
                                    int tp = 1, int pp = 1, int ep = 1, int cp = 1);
// Tests in the reference set the fields directly (bw_eff not applied): this keeps them raw.
CollectiveArgs make_collective_args_raw(const NetworkSpec& net, int num_nodes, int tp = 1);

// Building blocks (µs).
double bw_node(const CollectiveArgs& a, int g, bool a2a);  // g <= 0: hp
double sendrecv(const CollectiveArgs& a, double m);
double run_alltoall(const CollectiveArgs& a, double m, int g, Protocol p);
double direct_alltoall(const CollectiveArgs& a, double m_scaled, int g, Protocol p);
double single_shot_alltoall(const CollectiveArgs& a, double m, int g, Protocol p);
double hierarchical_alltoall(const CollectiveArgs& a, double m, int g, Protocol p);
double run_allgather(const CollectiveArgs& a, double m, int g, Protocol p);
double run_reduce_scatter(const CollectiveArgs& a, double m, int g, Protocol p);
double ring_allreduce(const CollectiveArgs& a, double m, int g, Protocol p);
double ring_allgather(const CollectiveArgs& a, double m, int g, Protocol p);
double ring_reduce_scatter(const CollectiveArgs& a, double m, int g, Protocol p);
double oneshot_hc_allreduce(const CollectiveArgs& a, double m, int g, Protocol p);
double single_shot_allgather(const CollectiveArgs& a, double m, int g, Protocol p);
double single_shot_reduce_scatter(const CollectiveArgs& a, double m, int g, Protocol p);
double single_shot_allreduce(const CollectiveArgs& a, double m, int g, Protocol p);
double hierarchical_allreduce(const CollectiveArgs& a, double m, int g, Protocol p);
double cp_allgather(const CollectiveArgs& a, double m, int g, Protocol p);

// Selectors (µs).
double allreduce(const CollectiveArgs& a, double m, int g);
double alltoall(const CollectiveArgs& a, double m, int g);
double allgather(const CollectiveArgs& a, double m, int g);
double reduce_scatter(const CollectiveArgs& a, double m, int g);

}  // namespace projector::primus
