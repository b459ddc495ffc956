// projector's collective model: alpha-beta per tier (scale-up fabric, scale-out NICs, pods) with
// the protocol and algorithm a collective library would pick, priced from where the group's
// members actually sit. The Primus-parity formulas are separate (cost/primus_collectives.h).
#pragma once

#include <array>
#include <string_view>

#include "projector/cost/op_cost.h"
#include "projector/hardware/hardware.h"

namespace projector {

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,
  kBroadcast
};
std::string_view to_string(CollectiveKind k);

// The part of a torus fabric (TPU ICI) a group spans inside one slice, and the slices it spans
// over the data-centre network. A member's neighbours along a spanned axis are one hop apart;
// `wrap` says the axis closes into a ring (its wraparound link exists), otherwise it is a line.
// `core` marks the axis of the devices (dies) of one chip, joined by the on-package link.
struct TorusSpan {
  static constexpr int kMaxAxes = 4;
  int axes = 0;  // spanned axes (0: the group does not lie on a torus)
  std::array<int, kMaxAxes> extent{};
  std::array<bool, kMaxAxes> wrap{};
  std::array<bool, kMaxAxes> core{};
  int slices = 1;  // slices spanned (> 1: the DCN tier is crossed)
  // Devices of one chip that send over the chip's ICI links at the same time (TPU7x: its two
  // dies): each gets 1 / sharers of a link's rate.
  int sharers = 1;
  bool placed() const { return axes > 0 || slices > 1; }
  int members_per_slice() const {
    int n = 1;
    for (int i = 0; i < axes; ++i) n *= extent[static_cast<std::size_t>(i)];
    return n;
  }
  friend bool operator==(const TorusSpan&, const TorusSpan&) = default;
};

// Where a communicator's members sit. Built by make_group from the parallel layout, or by hand.
struct CommGroup {
  int size = 1;            // members
  int ranks_per_node = 1;  // members that share a node (the group's scale-up part)
  int nodes = 1;           // nodes spanned
  int pods = 1;            // pods spanned (> 1: the cluster tier is crossed)
  int gpus_per_node = 8;   // node size (mesh link counts, NICs per GPU)
  TorusSpan torus = {};    // placed on a torus (TPU): priced by the torus model instead
  // All-to-all by a node-aggregating kernel (DeepEP / HybridEP normal kernels): each GPU sends
  // over the scale-out network only to its counterpart on every other node and forwards over the
  // scale-up links, so the NICs carry one stream per node pair instead of one per remote peer
  // (no per-peer contention, nodes - 1 remote peers).
  bool node_aggregated = false;
  // Node-aggregated: bytes forwarded over the receiving node's scale-up links per byte sent (each
  // GPU receives its own copies, deduplicated per GPU, through its node's counterparts). 0: the
  // plain all-to-all's intra-node share.
  double node_forward_ratio = 0.0;
  // All-to-all whose writes the GPU posts itself to every peer at once (DeepEP's and MORI's
  // low-latency kernels: NVSHMEM / IBGDA RDMA and P2P stores): no proxy thread, so neither the
  // per-peer latency nor the NIC contention of many proxy streams is paid in series.
  bool gpu_initiated = false;
  friend bool operator==(const CommGroup&, const CommGroup&) = default;
};

// The sizes make_group needs (a subset of ParallelSpec, so cost/ does not depend on the frontend).
// Megatron rank order: tp innermost, then cp, then dp; pp outermost. Expert layers re-fold the
// tp x cp x dp ranks as etp x ep x edp (etp innermost).
struct ParallelSizes {
  int tp = 1;
  int cp = 1;
  int dp = 1;
  int pp = 1;
  int ep = 1;
  int etp = 0;           // 0: tp (Megatron's default)
  int dp_replicate = 1;  // HSDP replicate groups (ParallelSpec::dp_replicate)
};

enum class GroupKind {
  kTp,      // size tp, stride 1
  kCp,      // size cp, stride tp
  kDp,      // size dp, stride tp*cp
  kDpCp,    // gradient group with context parallelism: size dp*cp, stride tp
  kPp,      // size pp, stride tp*cp*dp
  kPpPeer,  // the two ranks of one pipeline send/recv: size 2, stride tp*cp*dp
  kEtp,     // size etp, stride 1
  kEp,      // size ep, stride etp
  kEdp,     // expert data parallel: size tp*cp*dp/(etp*ep), stride etp*ep
  kEtpEp,  // expert tensor x expert parallel (MoE allgather / flex dispatch): size etp*ep, stride 1
  // HSDP (dp_replicate > 1, PyTorch FSDP2 meshes with the replicate dimension outermost):
  kDpCpShard,      // one shard group: size dp*cp/dp_replicate, stride tp
  kEdpShard,       // its expert counterpart: size tp*cp*dp/(etp*ep*dp_replicate), stride etp*ep
  kDpCpReplicate,  // across the shard groups: size dp_replicate, stride tp*cp*dp/dp_replicate
};
std::string_view to_string(GroupKind k);

// The GPUs one "node" tier of the collective model holds: the host's GPUs, or a scale-up domain
// that spans hosts when both the accelerator and the network declare one (GB200 / GB300 NVL72:
// 18 hosts of 4 GPUs on one NVLink fabric, network node_size 72). Groups inside such a domain
// never touch a NIC; torus fabrics (TPU) are placed by the torus model instead.
int collective_node_gpus(const AcceleratorSpec& acc, const NetworkSpec& net, int gpus_per_node);

// A group of `size` ranks at rank distance `stride`, nodes of `gpus_per_node` GPUs, pods of
// `pod_size_gpus` GPUs (0: one pod). Assumes the group starts at a node boundary (rank 0's group).
CommGroup make_group(int size, int stride, int gpus_per_node, int pod_size_gpus = 0);
CommGroup make_group(GroupKind kind, const ParallelSizes& p, int gpus_per_node,
                     int pod_size_gpus = 0);

// Message-size convention (that of nccl-tests "size"): all-reduce and broadcast: the buffer;
// all-gather: the gathered output per rank; reduce-scatter: the input per rank (before scatter);
// all-to-all: everything one rank sends, its own slice included; send/recv: the bytes sent.
// The send/recv group has size 2 (ranks_per_node 2 = same node).
struct CollectiveEstimate {
  OpCost cost;                      // time_s, bytes = bus bytes per rank, efficiency = busbw / link
  std::string_view algorithm;       // "ring", "nvls", "hierarchical", "tree", "direct", "p2p", ...
  std::string_view protocol;        // "LL", "LL128", "Simple"
  double bus_bw_bytes_per_s = 0.0;  // nccl-tests busbw of this call
};

// The library's choice: the minimum over protocols (LL, LL128 where enabled, Simple) and the
// algorithms valid for the placement (single node: ring, NVLS; multi-node: hierarchical with a ring
// or tree inter-node leg, flat ring), like NCCL's tuner and Primus' selectors. Pure function.
CollectiveEstimate collective_estimate(const NetworkSpec& net, CollectiveKind kind, double bytes,
                                       const CommGroup& group);
inline OpCost collective_time(const NetworkSpec& net, CollectiveKind kind, double bytes,
                              const CommGroup& group) {
  return collective_estimate(net, kind, bytes, group).cost;
}

// The torus model (cost/torus_collective.cpp): ring algorithms along each spanned axis at the
// per-link rate (both directions on a wrapped axis, one on a line), all axes concurrently,
// all-to-all limited by the busiest axis' link load, the DCN leg of a multi-slice group over each
// chip's share of the slice's NICs. `group.torus` must be placed().
CollectiveEstimate torus_collective_estimate(const NetworkSpec& net, CollectiveKind kind,
                                             double bytes, const CommGroup& group);

// nccl-tests bus-bandwidth factor: busbw = algbw x factor (all-reduce 2(n-1)/n, AG/RS/A2A (n-1)/n).
double bus_bandwidth_factor(CollectiveKind kind, int n);

}  // namespace projector
