// Job builder steps (builder_detail.h): the accelerator and network, the nodes and world, a
// device mesh's axes, torus places and slices.
#include <algorithm>
#include <numeric>

#include "job/builder_detail.h"
#include "projector/hardware/catalog.h"
#include "projector/job/layout.h"
#include "projector/job/mesh.h"

namespace projector::job_detail {

// The accelerator (a TPU7x-like part is split into its devices: device_share), the network.
void Builder::load_hardware(const ClusterRequest& req) {
  ClusterSpec& cl = job_.cluster;
  const std::string data_dir = req.data_dir.empty() ? default_data_dir() : req.data_dir;
  if (req.accelerator) {
    cl.accelerator = *req.accelerator;
  } else {
    std::string hw = req.hardware;
    const SourceLocation& stated = d_.origin(DraftField::kHardware).where;
    if (!hw.empty()) {
      cl.accelerator_origin = origin_text(stated, d_.key(DraftField::kHardware));
    } else if (!d_.hardware.empty()) {
      hw = d_.hardware;
      record(DraftField::kHardware, hw, d_.hardware_reason);
      cl.accelerator_origin = "assumed: " + d_.hardware_reason;
    } else {
      hw = req.default_hardware;
      record(DraftField::kHardware, hw, req.default_hardware_reason);
      cl.accelerator_origin = "assumed: " + req.default_hardware_reason;
    }
    try {
      cl.accelerator = load_accelerator(hw, data_dir);
    } catch (const InputError& e) {
      throw located(e, d_.origin(DraftField::kHardware).where);
    }
  }
  if (cl.accelerator.devices_per_chip > 1 && cl.devices_per_chip == 1) {
    cl.devices_per_chip = cl.accelerator.devices_per_chip;
    cl.accelerator = device_share(cl.accelerator);
    job_.defaults.push_back(
        {"cluster.devices_per_chip", show(cl.devices_per_chip),
         fmt::format("{} shows each chip as {} devices; every rank is one device with 1/{} of the "
                     "chip's compute, memory and bandwidth",
                     cl.accelerator.name, cl.devices_per_chip, cl.devices_per_chip),
         ""});
  }
  if (req.loaded_network) {
    cl.network = *req.loaded_network;
  } else {
    try {
      cl.network = req.network.empty() ? default_network_for(cl.accelerator, data_dir)
                                       : load_network(req.network, data_dir);
    } catch (const InputError& e) {
      throw located(e, req.network.empty() ? SourceLocation{} : req.network_where);
    }
  }
  for (const std::string& k : cl.network.unknown_keys) {
    job_.warnings.push_back(fmt::format("network: unknown key '{}' (ignored)", k));
  }
}

// Devices the stated mesh axes need at least (the -1 axes take what is left).
std::int64_t Builder::mesh_min_world() const {
  std::int64_t n = 1;
  for (const MeshAxis& a : d_.mesh) {
    n = group_size(DraftField::kMesh, "the mesh axes", {n, std::max(1, a.ici), std::max(1, a.dcn)});
  }
  return n;
}

// lcm(a, b) of two group sizes, refused past kMaxWorldSize (the world is a multiple of it).
std::int64_t Builder::world_lcm(std::int64_t a, std::int64_t b, DraftField f) const {
  const std::optional<std::int64_t> l = bounded_product(a / std::gcd(a, b), b, kMaxWorldSize);
  if (!l) {
    fail(LayoutRule::kWorldSize, f,
         fmt::format("the parallel groups need more than the {} GPUs this tool models",
                     kMaxWorldSize));
  }
  return *l;
}

void Builder::cluster(const ClusterRequest& req) {
  ClusterSpec& cl = job_.cluster;
  load_hardware(req);
  if (req.gpus_per_node) {
    if (*req.gpus_per_node < 1 || *req.gpus_per_node > kMaxWorldSize) {
      fail(LayoutRule::kSizes, DraftField::kGpusPerNode,
           fmt::format("must be a positive integer up to {}, got {}", kMaxWorldSize,
                       *req.gpus_per_node));
    }
    cl.gpus_per_node = static_cast<int>(*req.gpus_per_node);
    if (req.per_chip_counts) cl.gpus_per_node *= cl.devices_per_chip;
  } else {
    cl.gpus_per_node =
        cl.accelerator.default_gpus_per_node > 0 ? cl.accelerator.default_gpus_per_node : 8;
    record(DraftField::kGpusPerNode, show(cl.gpus_per_node),
           fmt::format("{} default", cl.accelerator.name));
  }
  // The fewest nodes whose GPUs both parallel groups divide.
  const ParallelSpec& p = job_.parallel;
  const std::int64_t dense = group_size(DraftField::kTp, "TP x PP x CP", {p.tp, p.pp, p.cp});
  const std::int64_t expert = group_size(DraftField::kEp, "ETP x EP x PP", {p.etp, p.ep, p.pp});
  std::int64_t min_world = world_lcm(dense, expert, DraftField::kEp);
  if (d_.dp) {
    // A stated DP fixes the world; a world smaller than a node is one partial node.
    const std::int64_t stated =
        group_size(DraftField::kDp, "DP x TP x PP x CP", {dense, std::max(1, *d_.dp)});
    if (!req.gpus_per_node && !req.nodes && stated < cl.gpus_per_node) {
      cl.gpus_per_node = static_cast<int>(stated);
      record(DraftField::kGpusPerNode, show(cl.gpus_per_node),
             fmt::format("the stated {} x TP x PP x CP = {} GPUs, fewer than a node",
                         d_.key(DraftField::kDp), stated));
    }
    min_world = world_lcm(min_world, stated, DraftField::kDp);
  }
  if (!d_.mesh.empty()) min_world = world_lcm(min_world, mesh_min_world(), DraftField::kMesh);
  const std::int64_t min_nodes = min_world / std::gcd(min_world, std::int64_t{cl.gpus_per_node});
  std::int64_t nodes = min_nodes;
  if (d_.devices && *d_.devices > kMaxWorldSize) {
    fail(
        LayoutRule::kWorldSize, DraftField::kNodes,
        fmt::format("{} devices is more than the {} this tool models", *d_.devices, kMaxWorldSize));
  }
  if (!req.nodes && d_.devices && *d_.devices > 0) {
    nodes = std::max<std::int64_t>(1, (*d_.devices + cl.gpus_per_node - 1) / cl.gpus_per_node);
    record(DraftField::kNodes, fmt::format("{}", nodes),
           fmt::format("{} devices ({}) in nodes of {}", *d_.devices, d_.hardware_reason,
                       cl.gpus_per_node));
  } else if (req.nodes) {
    nodes = *req.nodes;
    if (nodes < 1 || nodes > kMaxCount) {
      fail(LayoutRule::kSizes, DraftField::kNodes,
           fmt::format("must be a positive integer up to {}, got {}", kMaxCount, nodes));
    }
    if (req.nodes_at_least_minimum && nodes < min_nodes) {
      job_.warnings.push_back(fmt::format(
          "{}={} is fewer than the {} node(s) the parallelism needs; projecting {} node(s)",
          d_.key(DraftField::kNodes), nodes, min_nodes, min_nodes));
      nodes = min_nodes;
    }
  } else if (!d_.devices) {
    record(DraftField::kNodes, fmt::format("{}", min_nodes),
           d_.mesh.empty() ? "minimum nodes for TP x PP x CP and ETP x EP x PP"
                           : "minimum nodes for the stated mesh axes");
  }
  world_ = nodes * cl.gpus_per_node;
  if (nodes > kMaxWorldSize || world_ > kMaxWorldSize) {
    fail(LayoutRule::kWorldSize, DraftField::kNodes,
         fmt::format("{} nodes x {} GPUs = {} GPUs is more than the {} this tool models", nodes,
                     cl.gpus_per_node, world_, kMaxWorldSize));
  }
  // The embedding plan places every table on every rank (row-wise shards): its time and memory
  // grow with the ranks (262,144 took a minute and 3.5 GiB), so recommendation jobs have a bound
  // of their own.
  if (job_.model.family == ModelFamily::kRecommendation && world_ > kMaxRecommendationRanks) {
    fail(LayoutRule::kWorldSize, DraftField::kNodes,
         fmt::format("{} nodes x {} GPUs = {} GPUs is more than the {} this tool models for a "
                     "recommendation model",
                     nodes, cl.gpus_per_node, world_, kMaxRecommendationRanks));
  }
  cl.nodes = static_cast<int>(nodes);
}

// Slices of a mesh job: stated, else GPU nodes (each node's devices are the ICI group), else the
// DCN axes' stated product, else as many as the pod size forces.
int Builder::mesh_slices(const ClusterRequest& req) {
  const ClusterSpec& cl = job_.cluster;
  if (req.slices) return *req.slices;
  if (d_.slices) return *d_.slices;
  if (cl.accelerator.scaleup_topology != "torus") return cl.nodes;
  std::int64_t stated = 1;
  bool open = false;
  for (const MeshAxis& a : d_.mesh) {
    if (a.dcn == -1) open = true;
    stated *= std::max(1, a.dcn);
  }
  if (!open) return static_cast<int>(stated);
  const std::int64_t pod =
      static_cast<std::int64_t>(cl.accelerator.scaleup_domain) * std::max(1, cl.devices_per_chip);
  if (pod > 0 && world_ > pod && world_ % pod == 0) {
    const int slices = static_cast<int>(world_ / pod);
    record(DraftField::kMesh, fmt::format("{} slices", slices),
           fmt::format("{} devices do not fit one {}-chip {} pod", world_,
                       cl.accelerator.scaleup_domain, cl.accelerator.name));
    return slices;
  }
  return 1;
}

// The slice's torus shape and the mesh axes' places on it.
void Builder::mesh_torus(const ClusterRequest& req, std::vector<MeshAxis>& mesh, int slices) {
  ClusterSpec& cl = job_.cluster;
  cl.slices = slices;
  if (cl.accelerator.scaleup_topology != "torus") return;
  const std::int64_t chips = world_ / slices / std::max(1, cl.devices_per_chip);
  auto matches = [&](const std::vector<int>& shape) {
    std::optional<std::int64_t> n = 1;
    for (int v : shape) {
      if (n) n = bounded_product(*n, v, kMaxWorldSize);
    }
    return !shape.empty() && n == chips;
  };
  if (matches(req.slice_shape)) {
    cl.slice_shape = req.slice_shape;
  } else if (matches(d_.slice_shape)) {
    cl.slice_shape = d_.slice_shape;
  } else {
    cl.slice_shape = default_slice_shape(chips, cl.accelerator);
    job_.defaults.push_back({"cluster.slice_shape", to_string(cl.slice_shape),
                             fmt::format("not stated; the usual {}-chip {} slice (docs/tpu.md)",
                                         chips, cl.accelerator.name),
                             ""});
  }
  if (const std::string why =
          place_mesh(mesh, cl.slice_shape, cl.devices_per_chip, d_.mesh_placement);
      !why.empty()) {
    job_.warnings.push_back(
        fmt::format("mesh placement '{}' not applied ({}): JAX's default placement used",
                    d_.mesh_placement, why));
  }
}

// Sizes stated besides the mesh (--tp / PRIMUS_TP ...) replace the ICI size of their mesh axis;
// the FSDP axis then takes what the others leave of the slice.
void Builder::override_mesh_axes(std::vector<MeshAxis>& mesh) const {
  const std::pair<const std::optional<int>*, MeshRole> stated[] = {{&d_.tp, MeshRole::kTensor},
                                                                   {&d_.pp, MeshRole::kStage},
                                                                   {&d_.cp, MeshRole::kContext},
                                                                   {&d_.ep, MeshRole::kExpert}};
  bool changed = false;
  for (const auto& [v, role] : stated) {
    if (!v->has_value()) continue;
    // clang 14 (the fuzz preset) cannot capture a structured binding: a copy is captured.
    auto it = std::find_if(mesh.begin(), mesh.end(),
                           [r = role](const MeshAxis& a) { return a.role == r; });
    if (it == mesh.end()) {
      mesh.push_back({role, std::string(to_string(role)), 1, 1, {}, {}});
      it = mesh.end() - 1;
    }
    for (MeshAxis& a : mesh) {
      if (a.role == role && &a != &*it) a.ici = 1;
    }
    it->ici = **v;
    changed = true;
  }
  if (!changed) return;
  for (MeshAxis& a : mesh) {
    if (a.ici == -1) a.ici = 1;
  }
  auto fsdp = std::find_if(mesh.begin(), mesh.end(),
                           [](const MeshAxis& a) { return a.role == MeshRole::kFsdp; });
  if (fsdp == mesh.end()) {
    mesh.push_back({MeshRole::kFsdp, "fsdp", -1, 1, {}, {}});
  } else {
    fsdp->ici = -1;
  }
}

// A device mesh: resolves its -1 axes for the devices and slices, places it on the torus and
// derives the neutral sizes (job/mesh.h mesh_sizes).
void Builder::mesh_layout(const ClusterRequest& req) {
  if (d_.mesh.empty()) return;
  ParallelSpec& p = job_.parallel;
  const int slices = mesh_slices(req);
  if (slices < 1 || world_ % slices != 0) {
    fail(LayoutRule::kSizes, DraftField::kMesh,
         fmt::format("{} devices do not split into {} slices", world_, slices));
  }
  std::vector<MeshAxis> mesh = d_.mesh;
  override_mesh_axes(mesh);
  if (const std::string e = resolve_mesh(mesh, world_ / slices, slices); !e.empty()) {
    fail(LayoutRule::kSizes, DraftField::kMesh,
         fmt::format("{} ({} devices in {} slice(s))", e, world_, slices));
  }
  mesh_torus(req, mesh, slices);
  const MeshSizes s = mesh_sizes(mesh);
  p.tp = s.tp;
  p.pp = s.pp;
  p.cp = s.cp;
  p.ep = s.ep;
  p.etp = p.tp;  // expert MLP columns shard over the tensor axes like dense ones
  etp_choices_ = {p.tp};
  p.dp_replicate = s.replicate;
  p.mesh = std::move(mesh);
  mesh_fsdp_ = s.fsdp_shard > 1 ? FsdpKind::kFsdp2 : FsdpKind::kNone;
  mesh_sequence_parallel_ = s.tp > 1;
  experts_on_fsdp(s.fsdp_shard);
}

// Experts sharded on their expert dimension over the FSDP shards (JobDraft::experts_on_fsdp_key):
// the same bytes as sharding their embed dimension when the shards divide the experts. Otherwise
// GSPMD pads the dimension to a multiple of the shards (ceil(E / F) experts each, some shards
// padding): that padding's memory and gathers are not modelled, so the job says so.
void Builder::experts_on_fsdp(std::int64_t fsdp_shards) {
  if (d_.experts_on_fsdp_key.empty() || fsdp_shards <= 1) return;
  std::int64_t experts = 0;
  for (const LayerSpec& l : job_.model.layers) {
    if (l.is_moe) experts = std::max<std::int64_t>(experts, l.moe.num_experts);
  }
  if (experts <= 0 || experts % fsdp_shards == 0) return;
  const SourceLocation& w = d_.experts_on_fsdp_where;
  const std::int64_t per_shard = (experts + fsdp_shards - 1) / fsdp_shards;
  job_.warnings.push_back(fmt::format(
      "{}{}: {}: the {} FSDP shards do not divide the {} experts: GSPMD pads the expert "
      "dimension to {} slots, {} per device; the padding's memory and gathers are not modelled "
      "(each device is projected with {} / {} of the experts' weights)",
      w.file, w.line > 0 ? fmt::format(":{}", w.line) : std::string(), d_.experts_on_fsdp_key,
      fsdp_shards, experts, per_shard * fsdp_shards, per_shard, experts, fsdp_shards));
}

}  // namespace projector::job_detail
