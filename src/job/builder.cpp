// The job builder (job/builder.h): JobDraft -> JobSpec. The steps, in order: sizes, cluster,
// expert TP, data parallelism, batches, virtual stages, schedule, framework defaults, rules.
#include "projector/job/builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "projector/hardware/catalog.h"
#include "projector/job/layout.h"
#include "projector/job/mesh.h"
#include "projector/model/bounds.h"
#include "projector/schedule/schedule.h"

namespace projector {
namespace {

// "--hardware", "environment PRIMUS_GPU_ARCH", "exp.yaml:12 (gpu_arch)": where a value was stated.
std::string origin_text(const SourceLocation& where, const std::string& key) {
  if (where.file.empty()) return "stated";
  if (where.line > 0) return fmt::format("{}:{} ({})", where.file, where.line, key);
  return where.file;
}

std::string show(bool v) {
  return v ? "true" : "false";
}
std::string show(int v) {
  return fmt::format("{}", v);
}
std::string show(double v) {
  return fmt::format("{}", v);
}
std::string show(Dtype v) {
  return std::string(to_string(v));
}
std::string show(Fp8Recipe v) {
  return std::string(to_string(v));
}
std::string show(FsdpKind v) {
  return std::string(to_string(v));
}
std::string show(const RecomputeModules& v) {
  return fmt::format("[{}]", fmt::join(v.names(), ", "));
}

bool has_moe(const ModelSpec& m) {
  return std::any_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return l.is_moe; });
}

// The schedule module's selection rule for `auto`.
schedule::ScheduleSelection auto_schedule(int pp, int vpp) {
  return schedule::select_schedule(ScheduleKind::kAuto, pp, vpp, false);
}

class Builder {
 public:
  explicit Builder(const JobDraft& d) : d_(d) {
    job_.source = d.source;
    job_.model = d.model;
    job_.parallel = d.parallel;
    job_.runtime = d.runtime;
    job_.defaults = d.defaults;
    job_.warnings = d.warnings;
  }

  JobSpec build(const ClusterRequest& request) {
    model_bounds();
    sizes();
    cluster(request);
    mesh_layout(request);
    expert_tensor_parallel();
    data_parallel();
    batches();
    virtual_stages();
    schedule_choice();
    if (job_.model.family == ModelFamily::kRecommendation) {
      recommendation();  // the LLM behaviour defaults do not apply
    } else {
      parallel_defaults();
      runtime_defaults();
    }
    // The split policy the rules read (job/rules.h rule_facts), kept for re-layouts of the job.
    job_.parallel.uneven_layers_allowed = d_.layer_split.allow_uneven;
    job_.parallel.stages_stated = d_.layer_split.kind != LayerSplit::Kind::kBalanced ||
                                  d_.layer_split.embedding_in_split || d_.layer_split.loss_in_split;
    check_rules();
    return std::move(job_);
  }

 private:
  [[noreturn]] void fail(LayoutRule rule, DraftField f, const std::string& message) const {
    const FieldOrigin& o = d_.origin(f);
    SourceLocation where = o.where;
    if (where.file.empty() && where.line == 0) where.file = d_.source;
    throw JobRuleError(rule, f, std::move(where), d_.key(f), message);
  }
  // `flag` when the command line stated it (a layout flag the user just typed is what to blame),
  // else `otherwise`.
  DraftField flag_or(DraftField flag, DraftField otherwise) const {
    const std::string& file = d_.origin(flag).where.file;
    return file.rfind("--", 0) == 0 ? flag : otherwise;
  }
  void record(DraftField f, std::string value, std::string reason, bool from_profile = false) {
    job_.defaults.push_back(
        {d_.key(f), std::move(value), std::move(reason), from_profile ? d_.profile.name : ""});
  }
  // The stated value, else the profile's (recorded), else `fallback` (recorded as unset).
  template <typename T>
  T decide(DraftField f, const std::optional<T>& stated, const ProfileDefault<T>& def, T fallback) {
    if (stated) return *stated;
    if (def.value) {
      record(f, show(*def.value), def.source, true);
      return *def.value;
    }
    record(f, show(fallback), fmt::format("{} has no default", d_.profile.name), true);
    return fallback;
  }
  // The stated value, else the profile's rule for this layout (recorded). `rule` keeps what decided
  // it (a stated value as kAlways / kNever) for a later re-layout (job/layout.h relayout).
  bool decide_when(DraftField f, const std::optional<bool>& stated,
                   const ProfileDefault<WhenRule>& def, WhenRule& rule) {
    if (stated) {
      rule = *stated ? WhenRule::kAlways : WhenRule::kNever;
      return *stated;
    }
    rule = def.value.value_or(WhenRule::kNever);
    const bool v = job_.parallel.applies(rule);
    record(f, show(v),
           def.value ? fmt::format("{} ({})", to_string(*def.value), def.source)
                     : fmt::format("{} has no default", d_.profile.name),
           true);
    return v;
  }

  int size_or(DraftField f, const std::optional<int>& v, int fallback, const char* reason,
              std::int64_t max_value) {
    if (!v) {
      if (reason != nullptr) record(f, show(fallback), reason);
      return fallback;
    }
    if (*v < 1 || *v > max_value) {
      fail(LayoutRule::kSizes, f,
           fmt::format("must be a positive integer up to {}, got {}", max_value, *v));
    }
    return *v;
  }
  // A bound broken by a value of the model or the batches: named by the adapter's key and line
  // when the input stated it, else by the input file.
  [[noreturn]] void fail_bound(const BoundViolation& v, DraftField fallback) const;

  void model_bounds();
  // A catalogue error that names no file, placed where the name was given (else the input).
  InputError located(const InputError& e, SourceLocation where) const {
    if (!e.where().file.empty()) return e;
    if (where.file.empty()) where.file = d_.source;
    return InputError(std::move(where), e.key(), e.message());
  }
  void sizes();
  std::int64_t group_size(DraftField f, const char* what,
                          std::initializer_list<std::int64_t> sizes) const;
  void cluster(const ClusterRequest& request);
  void load_hardware(const ClusterRequest& request);
  std::int64_t mesh_min_world() const;
  std::int64_t world_lcm(std::int64_t a, std::int64_t b, DraftField f) const;
  void mesh_layout(const ClusterRequest& request);
  void override_mesh_axes(std::vector<MeshAxis>& mesh) const;
  int mesh_slices(const ClusterRequest& request);
  void mesh_torus(const ClusterRequest& request, std::vector<MeshAxis>& mesh, int slices);
  void per_device_batches();
  void expert_tensor_parallel();
  void data_parallel();
  void batches();
  void micro_batch_size();
  void sequence_length();
  void global_batch_size();
  void accumulation_rounds();
  int derived_batch(std::int64_t gbs, const char* what) const {
    if (gbs > kMaxGlobalBatch) {
      fail(LayoutRule::kSizes, DraftField::kGlobalBatchSize,
           fmt::format("not stated, and {} = {} is more than the {} sequences this tool models",
                       what, gbs, kMaxGlobalBatch));
    }
    return static_cast<int>(gbs);
  }
  void virtual_stages();
  int derived_vpp();
  void stated_stages(const std::vector<StatedStage>& stages);
  void first_last_stages();
  void stages_from_ranks(const std::vector<int>& per_rank, int less_first, int less_last);
  void balanced_split();
  void weighted_split();
  void schedule_choice();
  void parallel_defaults();
  void runtime_defaults();
  void host_dispatch_defaults();
  void recommendation();
  void check_rules() const;
  void check_moe_overlap() const;
  std::string rule_message(LayoutRule rule) const;

  const JobDraft& d_;
  JobSpec job_;
  std::int64_t world_ = 0;
  std::vector<int> etp_choices_;  // in order of preference (one when stated)
  // What a device mesh implies when the draft does not state it otherwise.
  std::optional<FsdpKind> mesh_fsdp_;
  std::optional<bool> mesh_sequence_parallel_;
};

void Builder::sizes() {
  ParallelSpec& p = job_.parallel;
  if (!d_.mesh.empty()) {
    // Derived from the mesh once the devices are known (mesh_layout).
    p.tp = p.pp = p.cp = p.ep = 1;
    etp_choices_ = {1};
    p.etp = 1;
    return;
  }
  constexpr std::int64_t kGroup = kMaxWorldSize;  // a group cannot exceed the world
  p.tp = size_or(DraftField::kTp, d_.tp, 1, "not stated; no tensor parallelism", kGroup);
  p.pp = size_or(DraftField::kPp, d_.pp, 1, "not stated; no pipeline parallelism", kGroup);
  p.cp = size_or(DraftField::kCp, d_.cp, 1, "not stated; no context parallelism", kGroup);
  const bool moe = has_moe(job_.model);
  p.ep = size_or(DraftField::kEp, d_.ep, 1, moe ? "not stated; no expert parallelism" : nullptr,
                 kGroup);
  if (d_.vpp) size_or(DraftField::kVpp, d_.vpp, 1, nullptr, kMaxLayers);
  if (d_.layers_per_virtual_stage)
    size_or(DraftField::kVpp, d_.layers_per_virtual_stage, 1, nullptr, kMaxLayers);
  etp_choices_.clear();
  if (d_.etp) {
    etp_choices_.push_back(size_or(DraftField::kEtp, d_.etp, 1, nullptr, kGroup));
  } else if (!moe) {
    etp_choices_.push_back(p.tp);  // no experts: ETP has no meaning
  } else {
    for (const EtpChoice& c :
         d_.profile.expert_tensor_parallel.value.value_or(std::vector<EtpChoice>{{true, 1}})) {
      const int v = c.equal_to_tp ? p.tp : c.size;
      if (std::find(etp_choices_.begin(), etp_choices_.end(), v) == etp_choices_.end()) {
        etp_choices_.push_back(v);
      }
    }
  }
  p.etp = etp_choices_.front();
}

// The product of a group's sizes, refused past kMaxWorldSize (it must divide the world).
std::int64_t Builder::group_size(DraftField f, const char* what,
                                 std::initializer_list<std::int64_t> sizes) const {
  std::optional<std::int64_t> product = 1;
  for (const std::int64_t v : sizes) {
    if (product) product = bounded_product(*product, v, kMaxWorldSize);
  }
  if (!product) {
    fail(LayoutRule::kWorldSize, f,
         fmt::format("{} needs more than the {} GPUs this tool models", what, kMaxWorldSize));
  }
  return *product;
}

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
}

// MaxText's per_device_batch_size (may be fractional, e.g. 0.125 with context parallelism): the
// batch of one accumulation step is int(devices x pdbs), truncated, and the global batch that
// times the accumulation steps (MX types.py:3458-3466 calculate_global_batch_sizes); one
// microbatch per accumulation step (and per pipeline microbatch with PP) of each DP rank.
void Builder::per_device_batches() {
  RuntimeSpec& rt = job_.runtime;
  const ParallelSpec& p = job_.parallel;
  const int ga = std::max(1, d_.gradient_accumulation);
  const double exact = *d_.per_device_batch * static_cast<double>(world_);
  // A NaN, infinite or huge batch is refused before it is truncated to an integer.
  if (!(exact * ga <= static_cast<double>(kMaxGlobalBatch))) {
    fail(LayoutRule::kSizes, DraftField::kMicroBatchSize,
         fmt::format("{} x {} devices x {} accumulation steps is more than the {} sequences this "
                     "tool models",
                     *d_.per_device_batch, world_, ga, kMaxGlobalBatch));
  }
  if (!(exact >= 1.0)) {
    fail(LayoutRule::kSizes, DraftField::kMicroBatchSize,
         fmt::format("{} x {} devices = {} is less than one sequence per step (MaxText trains on "
                     "int(devices x per_device_batch_size))",
                     *d_.per_device_batch, world_, exact));
  }
  const auto step_batch = static_cast<std::int64_t>(exact);  // int(): truncated
  const std::int64_t gbs = step_batch * ga;
  const bool truncated = static_cast<double>(step_batch) != exact;
  const int pipeline =
      p.pp > 1 ? (d_.pipeline_microbatches > 0 ? d_.pipeline_microbatches : p.pp) : 1;
  const std::int64_t steps = static_cast<std::int64_t>(ga) * std::max(1, pipeline);
  // Past the global batch no rank gets a whole sequence (and the product stays in 64 bits).
  const std::int64_t per_rank =
      bounded_product(std::max(1, job_.dp()), steps, kMaxGlobalBatch).value_or(kMaxGlobalBatch + 1);
  if (gbs % per_rank != 0) {
    fail(LayoutRule::kGbs, DraftField::kMicroBatchSize,
         fmt::format("the global batch {} (per-device batch x {} devices) does not give each of "
                     "the {} batch-sharded ranks a whole number of sequences per microbatch "
                     "({} microbatches)",
                     gbs, world_, job_.dp(), steps));
  }
  rt.global_batch_size = static_cast<int>(gbs);
  rt.micro_batch_size = static_cast<int>(gbs / per_rank);
  job_.defaults.push_back(
      {"global_batch_size", show(rt.global_batch_size),
       fmt::format("{}int({} {} x {} devices) x {} accumulation steps",
                   truncated ? "truncated as MaxText does: " : "",
                   d_.key(DraftField::kGlobalBatchSize), *d_.per_device_batch, world_, ga),
       ""});
  job_.defaults.push_back(
      {"micro_batch_size", show(rt.micro_batch_size),
       fmt::format("global batch {} / ({} batch-sharded ranks x {} microbatches)", gbs, job_.dp(),
                   steps),
       ""});
}

void Builder::expert_tensor_parallel() {
  ParallelSpec& p = job_.parallel;
  if (d_.etp || !has_moe(job_.model)) return;
  const ProfileDefault<std::vector<EtpChoice>>& def = d_.profile.expert_tensor_parallel;
  for (std::size_t i = 0; i < etp_choices_.size(); ++i) {
    const int etp = etp_choices_[i];
    const std::int64_t group = static_cast<std::int64_t>(etp) * p.ep * p.pp;
    if (world_ % group != 0 && i + 1 < etp_choices_.size()) continue;
    p.etp = etp;
    record(DraftField::kEtp, show(etp),
           i == 0 ? def.source
                  : fmt::format("ETP {} would make ETP x EP x PP = {} not divide the world of {} "
                                "GPUs; the framework's other documented choice ({})",
                                etp_choices_.front(),
                                static_cast<std::int64_t>(etp_choices_.front()) * p.ep * p.pp,
                                world_, def.source),
           true);
    return;
  }
}

void Builder::data_parallel() {
  // DP follows from the world and the degrees (JobSpec::dp); 0 when the world does not divide,
  // which a rule reports. Here only a stated DP and the replicate degree are checked against it.
  const ParallelSpec& p = job_.parallel;
  const int dp = job_.dp();
  if (d_.dp && dp > 0 && dp != *d_.dp) {
    fail(LayoutRule::kWorldDense, DraftField::kDp,
         fmt::format("DP {} x TP {} x PP {} x CP {} = {} GPUs, but the world is {} GPUs", *d_.dp,
                     p.tp, p.pp, p.cp, static_cast<std::int64_t>(*d_.dp) * p.tp * p.pp * p.cp,
                     world_));
  }
  if (p.dp_replicate > 1 && dp > 0 && dp % p.dp_replicate != 0) {
    fail(LayoutRule::kWorldDense, DraftField::kDp,
         fmt::format("the replicate degree {} does not divide DP {}", p.dp_replicate, dp));
  }
}

// MaxText's per-device batch sets the microbatch and the global batch together; the other
// frameworks state (or default) each on its own.
void Builder::batches() {
  if (d_.per_device_batch) {
    per_device_batches();
    sequence_length();
  } else {
    micro_batch_size();
    sequence_length();
    global_batch_size();
  }
  accumulation_rounds();
  ModelSpec& m = job_.model;
  if (m.max_position_embeddings == 0) {
    m.max_position_embeddings = job_.runtime.seq_length;
    if (m.position_embedding == PositionEmbeddingKind::kLearnedAbsolute) {
      job_.defaults.push_back({"max_position_embeddings", show(job_.runtime.seq_length),
                               "not stated: the sequence length", ""});
    }
  }
}

void Builder::micro_batch_size() {
  RuntimeSpec& rt = job_.runtime;
  const FrameworkProfile& prof = d_.profile;
  if (d_.micro_batch_size) {
    rt.micro_batch_size =
        size_or(DraftField::kMicroBatchSize, d_.micro_batch_size, 1, nullptr, kMaxGlobalBatch);
  } else if (d_.flush_batch_size) {
    // One flush: the whole per-replica batch without PP, pipeline microbatches with PP.
    const int mbs =
        job_.parallel.pp > 1 ? d_.pipeline_micro_batch_size.value_or(1) : *d_.flush_batch_size;
    rt.micro_batch_size = size_or(DraftField::kMicroBatchSize, mbs, 1, nullptr, kMaxGlobalBatch);
    if (*d_.flush_batch_size % rt.micro_batch_size != 0) {
      fail(LayoutRule::kGbs, DraftField::kMicroBatchSize,
           fmt::format("the per-replica batch {} is not divisible by the microbatch size {}",
                       *d_.flush_batch_size, rt.micro_batch_size));
    }
  } else if (prof.micro_batch_size.value) {
    rt.micro_batch_size = *prof.micro_batch_size.value;
    record(DraftField::kMicroBatchSize, show(rt.micro_batch_size), prof.micro_batch_size.source,
           true);
  } else {
    fail(LayoutRule::kSizes, DraftField::kMicroBatchSize,
         fmt::format("required ({})", prof.micro_batch_size.source));
  }
}

void Builder::sequence_length() {
  RuntimeSpec& rt = job_.runtime;
  const FrameworkProfile& prof = d_.profile;
  if (d_.seq_length) {
    rt.seq_length = size_or(DraftField::kSeqLength, d_.seq_length, 1, nullptr, kMaxSeqLength);
  } else if (prof.seq_length.value) {
    rt.seq_length = *prof.seq_length.value;
    record(DraftField::kSeqLength, show(rt.seq_length), prof.seq_length.source, true);
  } else {
    fail(LayoutRule::kSizes, DraftField::kSeqLength,
         fmt::format("required ({})", prof.seq_length.source));
  }
}

void Builder::global_batch_size() {
  RuntimeSpec& rt = job_.runtime;
  const FrameworkProfile& prof = d_.profile;
  const int dp = std::max(1, job_.dp());
  if (d_.global_batch_size) {
    rt.global_batch_size =
        size_or(DraftField::kGlobalBatchSize, d_.global_batch_size, 1, nullptr, kMaxGlobalBatch);
  } else if (d_.replica_batch_size) {
    const std::int64_t replica =
        size_or(DraftField::kGlobalBatchSize, d_.replica_batch_size, 1, nullptr, kMaxGlobalBatch);
    rt.global_batch_size = derived_batch(replica * dp, "per-replica batch x DP");
    record(DraftField::kGlobalBatchSize, show(rt.global_batch_size),
           fmt::format("per-replica batch {} x DP {}", *d_.replica_batch_size, dp));
  } else if (prof.global_batch_size.value) {
    rt.global_batch_size = *prof.global_batch_size.value;
    record(DraftField::kGlobalBatchSize, show(rt.global_batch_size), prof.global_batch_size.source,
           true);
  } else {
    rt.global_batch_size =
        derived_batch(static_cast<std::int64_t>(rt.micro_batch_size) * dp, "micro_batch_size x DP");
    record(DraftField::kGlobalBatchSize, show(rt.global_batch_size),
           fmt::format("micro_batch_size x DP, one microbatch ({}: {})",
                       to_string(prof.microbatch_rule.value.value_or(MicrobatchRule::kGlobalBatch)),
                       prof.microbatch_rule.source),
           true);
  }
}

// Gradient accumulation outside the schedule: one flush per flush batch x DP samples.
void Builder::accumulation_rounds() {
  if (!d_.flush_batch_size) return;
  RuntimeSpec& rt = job_.runtime;
  const int dp = std::max(1, job_.dp());
  const std::int64_t per_flush = static_cast<std::int64_t>(*d_.flush_batch_size) * dp;
  if (rt.global_batch_size % per_flush != 0) {
    fail(LayoutRule::kGbs, DraftField::kGlobalBatchSize,
         fmt::format("global batch {} is not a multiple of the per-replica batch {} x DP {}",
                     rt.global_batch_size, *d_.flush_batch_size, dp));
  }
  rt.accumulation_rounds = static_cast<int>(rt.global_batch_size / per_flush);
  if (rt.accumulation_rounds > 1) {
    record(DraftField::kGlobalBatchSize, fmt::format("{} rounds", rt.accumulation_rounds),
           fmt::format("gradient accumulation: global batch {} / (per-replica batch {} x DP {}), "
                       "each round its own pipeline flush",
                       rt.global_batch_size, *d_.flush_batch_size, dp));
  }
}

// VPP when the draft does not state it: from layers per virtual stage, a stated layout's stage
// count, or the schedule (V-shape: 2; interleaved: the smallest legal, recorded).
int Builder::derived_vpp() {
  const int pp = job_.parallel.pp;
  int layers = job_.model.num_layers();
  if (d_.layers_per_virtual_stage) {
    const std::int64_t per = static_cast<std::int64_t>(*d_.layers_per_virtual_stage) * pp;
    // MG1 arguments.py:953-974: the embedding / loss count as layers here too.
    layers += (d_.layer_split.embedding_in_split ? 1 : 0) + (d_.layer_split.loss_in_split ? 1 : 0);
    if (layers % per != 0) {
      fail(LayoutRule::kLayerSplit, DraftField::kVpp,
           fmt::format("{} layers are not divisible by {} layers per virtual stage x PP {}", layers,
                       *d_.layers_per_virtual_stage, pp));
    }
    return static_cast<int>(layers / per);
  }
  const LayerSplit& split = d_.layer_split;
  if (split.kind == LayerSplit::Kind::kStated) {
    const int count = static_cast<int>(split.stages.size());
    if (count % pp == 0 && count / pp > 1) {
      record(DraftField::kVpp, show(count / pp),
             fmt::format("{} layout stages / PP {}", count, pp));
      return count / pp;
    }
    return 1;
  }
  if (pp > 1 && is_v_shape(d_.schedule)) {
    record(DraftField::kVpp, "2",
           fmt::format("not stated; {} runs two chunks per rank", to_string(d_.schedule)));
    return 2;
  }
  if (pp > 1 && d_.schedule == ScheduleKind::kInterleaved) {
    for (int v = 2; static_cast<std::int64_t>(pp) * v <= layers; ++v) {
      if (split.allow_uneven || layers % (pp * v) == 0) {
        record(DraftField::kVpp, show(v),
               "not stated; the smallest VPP the interleaved schedule can split the layers into");
        return v;
      }
    }
  }
  return 1;
}

void Builder::virtual_stages() {
  ParallelSpec& p = job_.parallel;
  p.vpp = d_.vpp ? *d_.vpp : derived_vpp();
  if (static_cast<std::int64_t>(p.pp) * p.vpp > kMaxLayers) {
    fail(LayoutRule::kLayers, d_.vpp ? DraftField::kVpp : DraftField::kPp,
         fmt::format("PP x VPP = {} x {} virtual stages is more than the {} this tool models", p.pp,
                     p.vpp, kMaxLayers));
  }
  if (p.vpp > 1 && p.pp == 1) {
    fail(LayoutRule::kScheduleNeedsPp, flag_or(DraftField::kVpp, DraftField::kPp),
         fmt::format("virtual pipeline stages ({}) need PP > 1", p.vpp));
  }
  switch (d_.layer_split.kind) {
    case LayerSplit::Kind::kStated:
      stated_stages(d_.layer_split.stages);
      break;
    case LayerSplit::Kind::kFirstLast:
      first_last_stages();
      break;
    case LayerSplit::Kind::kBalanced:
      balanced_split();
      break;
    case LayerSplit::Kind::kWeighted:
      weighted_split();
      break;
  }
}

void Builder::weighted_split() {
  ParallelSpec& p = job_.parallel;
  const LayerSplit& s = d_.layer_split;
  const int layers = job_.model.num_layers();
  const int z = p.pp * p.vpp;
  const int effective = layers + s.first_weight + s.last_weight;
  const int per = z > 0 ? effective / z : 0;
  if (z > 1 && (z > effective || s.first_weight > per || s.last_weight > per)) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
         fmt::format("{} layers with embedding / output weights {} / {} cannot fill {} stages "
                     "(each needs at least the weights)",
                     layers, s.first_weight, s.last_weight, z));
  }
  p.stages.clear();
  int next = 0;
  for (int i = 0; i < z; ++i) {
    int take = z == 1 ? layers : per + (i < effective % z ? 1 : 0);
    if (z > 1 && i == 0) take -= s.first_weight;
    if (z > 1 && i == z - 1) take -= s.last_weight;
    take = std::clamp(take, 0, layers - next);
    if (i == z - 1) take = layers - next;
    p.stages.push_back(
        {next, take, i == 0, i == z - 1, i == z - 1 ? job_.model.mtp_num_layers : 0});
    next += take;
  }
}

void Builder::stated_stages(const std::vector<StatedStage>& stages) {
  ParallelSpec& p = job_.parallel;
  const ModelSpec& model = job_.model;
  const int count = static_cast<int>(stages.size());
  if (count != p.pp * p.vpp) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
         fmt::format("layout has {} stages but PP x VPP = {} x {} = {}", count, p.pp, p.vpp,
                     p.pp * p.vpp));
  }
  p.stages.clear();
  int total = 0;
  int mtp = 0;
  for (const StatedStage& s : stages) {
    p.stages.push_back({total, s.decoder_layers, s.embedding, s.loss, s.mtp_layers});
    total += s.decoder_layers;
    mtp += s.mtp_layers;
  }
  if (total != model.num_layers()) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
         fmt::format("layout places {} decoder layers but the model has {}", total,
                     model.num_layers()));
  }
  if (mtp != 0 && mtp != model.mtp_num_layers) {
    fail(
        LayoutRule::kLayerSplit, DraftField::kLayerSplit,
        fmt::format("layout places {} MTP layers but the model has {}", mtp, model.mtp_num_layers));
  }
  if (mtp == 0 && model.mtp_num_layers > 0) {
    // Megatron puts MTP layers with the loss when the layout does not place them.
    for (VirtualStage& v : p.stages) {
      if (v.has_output) v.mtp_layers = model.mtp_num_layers;
    }
  }
}

// Per-rank layer counts -> virtual stages. Megatron gives each pipeline rank's layers evenly to
// its VPP model chunks and numbers the virtual stages chunk-major (z = chunk x PP + rank): MG7
// transformer_block.py:161-186 get_num_layers_to_build, :218 get_transformer_layer_offset.
// `less_first` / `less_last`: the first / last virtual stage builds one layer fewer (the embedding
// / loss counted as a layer, MG7 transformer_block.py:188-200).
void Builder::stages_from_ranks(const std::vector<int>& per_rank, int less_first, int less_last) {
  ParallelSpec& p = job_.parallel;
  const int z_count = p.pp * p.vpp;
  p.stages.clear();
  int first_layer = 0;
  for (int z = 0; z < z_count; ++z) {
    int n = per_rank[static_cast<std::size_t>(z % p.pp)] / p.vpp;
    if (z == 0) n -= less_first;
    if (z == z_count - 1) n -= less_last;
    p.stages.push_back({first_layer, n, z == 0, z == z_count - 1,
                        z == z_count - 1 ? job_.model.mtp_num_layers : 0});
    first_layer += n;
  }
}

// decoder_first / last_pipeline_num_layers: the first (last) pipeline RANK holds that many layers
// over all its virtual stages; the middle ranks share the rest evenly; every rank's count must
// divide by VPP (MG2 transformer_config.py:2295-2368; MG7 transformer_block.py:103-146).
void Builder::first_last_stages() {
  ParallelSpec& p = job_.parallel;
  const LayerSplit& s = d_.layer_split;
  const int layers = job_.model.num_layers();
  const bool has_first = s.first_stage_layers.has_value();
  const bool has_last = s.last_stage_layers.has_value() && p.pp > 1;
  const int first = s.first_stage_layers.value_or(0);
  const int last = has_last ? *s.last_stage_layers : 0;
  auto bad = [&](const std::string& why) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit, why);
  };
  if ((has_first && first <= 0) || (has_last && last <= 0)) {
    bad("the first / last pipeline stage must hold at least one layer");
  }
  const int middle_ranks = p.pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
  const int rest = layers - first - last;
  if (rest < 0 || (rest > 0) != (middle_ranks > 0)) {
    bad(
        fmt::format("first {} + last {} layers leave {} layers for {} middle pipeline ranks of {} "
                    "layers",
                    first, last, rest, std::max(0, middle_ranks), layers));
  }
  if (middle_ranks > 0 && rest % middle_ranks != 0) {
    bad(fmt::format("the {} middle layers do not divide over {} middle pipeline ranks", rest,
                    middle_ranks));
  }
  std::vector<int> per_rank(static_cast<std::size_t>(p.pp),
                            middle_ranks > 0 ? rest / middle_ranks : 0);
  if (has_first) per_rank.front() = first;
  if (has_last) per_rank.back() = last;
  if (p.pp == 1) per_rank.front() = layers;
  for (int r = 0; r < p.pp; ++r) {
    if (per_rank[static_cast<std::size_t>(r)] % p.vpp != 0) {
      bad(fmt::format("pipeline rank {} holds {} layers, not divisible by VPP {}", r,
                      per_rank[static_cast<std::size_t>(r)], p.vpp));
    }
  }
  stages_from_ranks(per_rank, 0, 0);
}

namespace {

// What to state when the layers do not divide: the framework's keys and, for a first-stage count,
// the one closest to an even share that leaves the other ranks balanced (each rank's layers
// divisible by VPP).
std::string uneven_split_advice(const LayerSplit& s, int layers, int pp, int vpp) {
  if (s.first_stage_key.empty()) {
    return "state the layout, the first / last stage layer counts or count the embedding / loss "
           "as layers";
  }
  int best = 0;
  for (int first = vpp; pp > 1 && first < layers; first += vpp) {
    const int rest = layers - first;
    if (rest % (pp - 1) != 0 || (rest / (pp - 1)) % vpp != 0) continue;
    if (best == 0 || std::abs(first * pp - layers) < std::abs(best * pp - layers)) best = first;
  }
  const std::string layout = s.layout_key.empty() ? "" : " or " + s.layout_key;
  if (best == 0) return fmt::format("set {}{}", s.first_stage_key, layout);
  return fmt::format("set {}: {} (then {} x {} layers){}", s.first_stage_key, best, pp - 1,
                     (layers - best) / (pp - 1), layout);
}

}  // namespace

void Builder::balanced_split() {
  ParallelSpec& p = job_.parallel;
  const LayerSplit& s = d_.layer_split;
  const int layers = job_.model.num_layers();
  const int z = p.pp * p.vpp;
  if (s.embedding_in_split || s.loss_in_split) {
    // MG2 transformer_config.py:2370-2400, MG1 arguments.py:985-997: the embedding and / or loss
    // count as layers, the total must divide by PP and each rank's share by VPP.
    const int total = layers + (s.embedding_in_split ? 1 : 0) + (s.loss_in_split ? 1 : 0);
    if (total % z != 0) {
      fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
           fmt::format("{} layers + embedding / loss = {} are not divisible by PP x VPP = {} x {}",
                       layers, total, p.pp, p.vpp));
    }
    // A virtual stage may hold no decoder layer beside the embedding (MG7 :194-196 asserts >= 0).
    stages_from_ranks(std::vector<int>(static_cast<std::size_t>(p.pp), total / p.pp),
                      s.embedding_in_split ? 1 : 0, s.loss_in_split ? 1 : 0);
    return;
  }
  if (z > layers && job_.model.family == ModelFamily::kDecoderLm) {
    fail(LayoutRule::kLayers,
         flag_or(p.vpp > 1 ? DraftField::kVpp : DraftField::kPp, DraftField::kLayerSplit),
         fmt::format("{} layers cannot fill PP x VPP = {} x {} = {} stages", layers, p.pp, p.vpp,
                     z));
  }
  if (z > 1 && layers % z != 0) {
    if (!s.allow_uneven) {
      fail(LayoutRule::kLayers, DraftField::kLayerSplit,
           fmt::format("{} layers are not divisible by PP x VPP = {} x {} = {} (Megatron "
                       "asserts it); {}",
                       layers, p.pp, p.vpp, z, uneven_split_advice(s, layers, p.pp, p.vpp)));
    }
    record(DraftField::kLayerSplit, "uneven",
           fmt::format("{} layers over {} virtual stages: the first {} take one more", layers, z,
                       layers % z));
  }
  balanced_stages_into(p.stages, layers, p.pp, p.vpp, job_.model.mtp_num_layers);
}

void Builder::schedule_choice() {
  RuntimeSpec& rt = job_.runtime;
  const ParallelSpec& p = job_.parallel;
  rt.schedule = d_.schedule;
  if (rt.schedule != ScheduleKind::kAuto) return;
  if (p.pp == 1) {
    rt.schedule = ScheduleKind::k1F1B;  // no pipeline: the schedule is moot
    return;
  }
  const bool full_recompute = rt.recompute.granularity == RecomputeGranularity::kFull;
  if (d_.prefer_zero_bubble && !full_recompute && p.vpp <= 2) {
    rt.schedule = p.vpp == 1 ? ScheduleKind::kZeroBubble : ScheduleKind::kZbvFormatted;
    record(DraftField::kSchedule, std::string(to_string(rt.schedule)),
           fmt::format("auto with zero bubble requested and VPP {}", p.vpp));
    return;
  }
  const schedule::ScheduleSelection sel = auto_schedule(p.pp, p.vpp);
  rt.schedule = sel.algorithm;
  record(DraftField::kSchedule, std::string(to_string(rt.schedule)), sel.reason);
}

void Builder::parallel_defaults() {
  ParallelSpec& p = job_.parallel;
  const FrameworkProfile& prof = d_.profile;
  p.fsdp = decide(DraftField::kFsdp, d_.fsdp ? d_.fsdp : mesh_fsdp_, prof.fsdp, FsdpKind::kNone);
  if (p.fsdp == FsdpKind::kNone || d_.distributed_optimizer) {
    p.distributed_optimizer = decide(DraftField::kDistributedOptimizer, d_.distributed_optimizer,
                                     prof.distributed_optimizer, false);
  }
  p.sequence_parallel =
      decide_when(DraftField::kSequenceParallel,
                  d_.sequence_parallel ? d_.sequence_parallel : mesh_sequence_parallel_,
                  prof.sequence_parallel, p.sequence_parallel_rule);
  if (p.sequence_parallel && p.tp == 1) {
    // Megatron turns it off at TP 1 (MG1 arguments.py:1433-1439): nothing to warn about.
    p.sequence_parallel = false;
    if (d_.sequence_parallel) {
      record(DraftField::kSequenceParallel, "false",
             "stated true, but sequence parallelism has no effect at TP 1 (Megatron disables it)");
    }
  }
  p.overlap_grad_reduce = decide(DraftField::kOverlapGradReduce, d_.overlap_grad_reduce,
                                 prof.overlap_grad_reduce, false);
  p.overlap_param_gather = decide_when(DraftField::kOverlapParamGather, d_.overlap_param_gather,
                                       prof.overlap_param_gather, p.overlap_param_gather_rule);
  p.tp_comm_overlap = decide_when(DraftField::kTpCommOverlap, d_.tp_comm_overlap,
                                  prof.tp_comm_overlap, p.tp_comm_overlap_rule);
  // The gradient bucket rule, recorded where an overlapped non-FSDP2 reduction uses it.
  p.ddp_bucket_min_params = prof.ddp_bucket_min_params.value.value_or(0);
  p.ddp_bucket_params_per_dp = prof.ddp_bucket_params_per_dp.value.value_or(0);
  if (p.overlap_grad_reduce && p.ddp_bucket_size_bytes == 0 && p.fsdp != FsdpKind::kFsdp2 &&
      p.ddp_bucket_min_params > 0) {
    job_.defaults.push_back({"ddp_bucket_size",
                             fmt::format("max({}, {} x DP) parameters", p.ddp_bucket_min_params,
                                         p.ddp_bucket_params_per_dp),
                             prof.ddp_bucket_min_params.source, d_.profile.name});
  }
  // XLA pads a KV-head axis the tensor axis does not divide (MaxText); recorded where it applies.
  p.kv_heads_padded = prof.kv_heads_padded.value.value_or(false);
  if (p.kv_heads_padded) {
    for (const LayerSpec& l : job_.model.layers) {
      const int kv = l.has_attention() && l.attention.kind == AttentionKind::kStandard
                         ? l.attention.num_query_groups
                         : 0;
      if (kv > 0 && kv % p.tp != 0) {
        job_.defaults.push_back(
            {"kv_heads_padded",
             fmt::format("{} KV heads over TP {}: {} per rank", kv, p.tp, p.kv_heads_per_rank(kv)),
             prof.kv_heads_padded.source, d_.profile.name});
        break;
      }
    }
  }
  if (has_moe(job_.model) && p.tp > 1 && !p.sequence_parallel) {
    job_.warnings.push_back(
        "MoE with TP > 1 needs sequence parallelism (Megatron-Core asserts it)");
  }
}

// The profile's host issue costs (microbenchmarks, data/frameworks), recorded as one default.
void Builder::host_dispatch_defaults() {
  const FrameworkProfile& prof = d_.profile;
  HostDispatch& h = job_.runtime.host_dispatch;
  std::vector<std::string> sources;
  const auto take = [&](const ProfileDefault<double>& d, double& out) {
    if (!d.value) return;
    out = *d.value * 1e-6;
    if (std::find(sources.begin(), sources.end(), d.source) == sources.end()) {
      sources.push_back(d.source);
    }
  };
  take(prof.host_op_us, h.op_s);
  take(prof.host_module_us, h.module_s);
  take(prof.host_launch_us, h.launch_s);
  if (!h.modelled()) return;
  record(DraftField::kHostDispatch,
         fmt::format("op {:.1f} us, module {:.1f} us, launch {:.1f} us", h.op_s * 1e6,
                     h.module_s * 1e6, h.launch_s * 1e6),
         fmt::format("{}", fmt::join(sources, "; ")), true);
}

void Builder::runtime_defaults() {
  RuntimeSpec& rt = job_.runtime;
  ModelSpec& m = job_.model;
  const FrameworkProfile& prof = d_.profile;
  rt.flash_attention =
      decide(DraftField::kFlashAttention, d_.flash_attention, prof.flash_attention, false);
  rt.attention_kernel =
      d_.attention_kernel
          ? *d_.attention_kernel
          : (rt.flash_attention ? prof.attention_kernel.value.value_or(AttentionKernel::kFused)
                                : AttentionKernel::kFused);
  rt.framework = prof.name;
  rt.backend = prof.backend;
  if (prof.kernel_gap_fraction.value) {
    rt.kernel_gap_fraction = decide(DraftField::kKernelGapFraction, std::optional<double>{},
                                    prof.kernel_gap_fraction, 0.0);
  }
  host_dispatch_defaults();
  rt.precision.fp8 =
      d_.fp8 ? decide(DraftField::kFp8Recipe, d_.fp8_recipe, prof.fp8_recipe, Fp8Recipe::kDelayed)
             : Fp8Recipe::kNone;
  if (rt.offload.any() && job_.cluster.accelerator.host_bw_bytes_per_s <= 0.0) {
    job_.warnings.push_back(fmt::format(
        "{} has no host_bandwidth in its accelerator file: the activation offload copies "
        "are priced at PCIe Gen4 x16 (32 GB/s, an estimate)",
        job_.cluster.accelerator.name));
  }
  if (rt.precision.fp4 != Fp4Recipe::kNone &&
      job_.cluster.accelerator.peak_flops(Dtype::kFp4) <= 0.0) {
    throw InputError({d_.source, 0, 0}, "fp4",
                     fmt::format("{} has no FP4 peak: FP4 ({}) GEMMs cannot run on it",
                                 job_.cluster.accelerator.name, to_string(rt.precision.fp4)));
  }
  rt.main_grads_dtype = decide(DraftField::kGradReduceDtype, d_.main_grads_dtype,
                               prof.grad_reduce_dtype, Dtype::kFp32);
  rt.loss_grad_in_place =
      decide(DraftField::kLossGradInPlace, d_.loss_grad_in_place, prof.loss_grad_in_place, true);
  if (has_moe(job_.model)) {
    const ProfileDefault<bool>& placement = prof.moe_probs_in_experts;
    rt.moe_probs_in_experts = placement.value.value_or(false);
    job_.defaults.push_back(
        {"moe_probs_in_experts", show(rt.moe_probs_in_experts),
         placement.value ? placement.source : d_.profile.name + " has no default",
         d_.profile.name});
  }
  RecomputeSpec& rc = rt.recompute;
  if (rc.granularity == RecomputeGranularity::kSelective && rc.modules.empty()) {
    rc.modules = decide(DraftField::kRecomputeModules, std::optional<RecomputeModules>{},
                        prof.selective_recompute, RecomputeModules{RecomputeModule::kCoreAttn});
  }
  if (m.family != ModelFamily::kDecoderLm) return;
  m.attention_dropout =
      decide(DraftField::kAttentionDropout, d_.attention_dropout, prof.dropout, 0.0);
  m.hidden_dropout = decide(DraftField::kHiddenDropout, d_.hidden_dropout, prof.dropout, 0.0);
  m.make_vocab_size_divisible_by =
      decide(DraftField::kVocabPadding, d_.vocab_padding, prof.vocab_padding, 1);
}

// overlap_moe_expert_parallel_comm needs expert parallelism and, with a pipeline, virtual stages
// (MG2 transformer_config.py:3007-3015).
void Builder::check_moe_overlap() const {
  if (!combined_forward_backward(job_)) return;
  // Checked here, after the command line's flags (--enable-deepep picks the flex dispatcher).
  if (job_.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
    fail(LayoutRule::kMoeOverlapDispatcher, DraftField::kMoeOverlap,
         "needs the alltoall or flex dispatcher (Megatron asserts it)");
  }
  const ParallelSpec& p = job_.parallel;
  if (p.ep <= 1) {
    fail(LayoutRule::kNotMoe, DraftField::kEp,
         "overlap_moe_expert_parallel_comm needs expert parallelism (EP > 1; Megatron asserts it)");
  }
  if (p.pp > 1 && p.vpp < 2) {
    fail(LayoutRule::kScheduleVpp, DraftField::kVpp,
         "overlap_moe_expert_parallel_comm with PP > 1 needs virtual pipeline stages (Megatron "
         "asserts it)");
  }
}

// TorchRec runs the dense part data-parallel and shards the tables (job/recsys_plan.h).
void Builder::recommendation() {
  const ParallelSpec& p = job_.parallel;
  const std::pair<DraftField, int> sizes[] = {{DraftField::kTp, p.tp},
                                              {DraftField::kPp, p.pp},
                                              {DraftField::kCp, p.cp},
                                              {DraftField::kEp, p.ep}};
  for (const auto& [field, v] : sizes) {
    if (v != 1) {
      fail(LayoutRule::kSizes, field,
           fmt::format("must be 1 for a recommendation model (the dense part runs data-parallel, "
                       "the embedding tables are sharded), got {}",
                       v));
    }
  }
  resolve_recsys(d_.recsys, d_.profile, job_, job_.defaults);
}

void Builder::check_rules() const {
  check_moe_overlap();
  const LayoutRule rule =
      check_layout(rule_facts(job_, RulePurpose::kStated, world_), layout_choice(job_));
  if (rule != LayoutRule::kLegal) fail(rule, field_of(rule), rule_message(rule));
  if (const std::optional<BoundViolation> v = check_runtime_bounds(job_)) {
    fail_bound(*v, DraftField::kGlobalBatchSize);
  }
}

void Builder::model_bounds() {
  if (const std::optional<BoundViolation> v = check_model_bounds(job_.model)) {
    fail_bound(*v, DraftField::kModel);
  }
}

void Builder::fail_bound(const BoundViolation& v, DraftField fallback) const {
  std::optional<FieldOrigin> o = d_.model_origin ? d_.model_origin(v.key) : std::nullopt;
  for (int i = 0; !o && i < kNumDraftFields; ++i) {  // a batch or recompute field
    const auto f = static_cast<DraftField>(i);
    if (to_string(f) == v.key || d_.origin(f).key == v.key) o = d_.origin(f);
  }
  FieldOrigin where = o.value_or(FieldOrigin{v.key, {}});
  if (where.where.file.empty() && where.where.line == 0) where.where.file = d_.source;
  throw JobRuleError(LayoutRule::kSizes, fallback, std::move(where.where),
                     where.key.empty() ? v.key : where.key, v.message);
}

// The GDN / KDA layer that breaks kTpLinearHeads, by its head counts.
std::string linear_heads_message(const ModelSpec& model, int tp) {
  for (const LayerSpec& l : model.layers) {
    if (!l.has_linear_attention()) continue;
    const LinearAttentionSpec& s = l.linear;
    if (s.kind == LinearAttentionKind::kKda && tp != 1) {
      return fmt::format("Kimi Delta Attention runs at TP 1 only (Primus), got TP {}", tp);
    }
    if (s.short_conv() && tp != 1) {
      return fmt::format(
          "LFM2 short-conv layers are modelled at TP 1 only (Primus does not split them), got TP "
          "{}",
          tp);
    }
    if (s.num_key_heads % tp != 0 || s.num_value_heads % tp != 0) {
      return fmt::format(
          "{} key / {} value heads of the linear attention (linear_num_key_heads / "
          "linear_num_value_heads) are not divisible by TP {}",
          s.num_key_heads, s.num_value_heads, tp);
    }
  }
  if (model.diffusion.enabled()) {
    return fmt::format(
        "tensor parallelism of Flux blocks (joint attention, adaLN) is not modelled, got TP {}",
        tp);
  }
  for (const LayerSpec& l : model.layers) {
    if (l.has_attention() && l.attention.kind == AttentionKind::kCompressed) {
      return fmt::format(
          "DeepSeek-V4 attention runs at TP 1 only (Primus duplicates its projections on every TP "
          "rank), got TP {}",
          tp);
    }
  }
  return fmt::format("linear-attention heads are not divisible by TP {}", tp);
}

// The framework or the layer that breaks kCpUnsupported.
std::string cp_unsupported_message(const JobSpec& job, int cp) {
  if (!job.parallel.cp_unsupported.empty()) {
    return fmt::format("{}, got CP {}", job.parallel.cp_unsupported, cp);
  }
  if (job.model.diffusion.enabled()) {
    return fmt::format("context parallelism of Flux's joint attention is not modelled, got CP {}",
                       cp);
  }
  for (const LayerSpec& l : job.model.layers) {
    if (l.has_attention() && l.attention.kind == AttentionKind::kCompressed) {
      return fmt::format(
          "context parallelism over DeepSeek-V4's compressed attention is not modelled, got CP {}",
          cp);
    }
    if (l.has_linear_attention()) {
      return fmt::format("context parallelism over {} layers is not modelled, got CP {}",
                         l.linear.short_conv() ? "LFM2 short-conv" : "GDN / KDA (head all-to-all)",
                         cp);
    }
  }
  return fmt::format("context parallelism is not modelled for this model, got CP {}", cp);
}

std::string Builder::rule_message(LayoutRule rule) const {
  const ParallelSpec& p = job_.parallel;
  const RuntimeSpec& rt = job_.runtime;
  const ClusterSpec& cl = job_.cluster;
  const LayerSpec* layer = job_.model.layers.empty() ? nullptr : &job_.model.layers.front();
  const std::int64_t per_step = static_cast<std::int64_t>(rt.micro_batch_size) * job_.dp();
  const std::int64_t m = per_step > 0 ? rt.global_batch_size / per_step : 0;
  const int rounds = std::max(1, rt.accumulation_rounds);
  const std::string per_round =
      rounds > 1 ? fmt::format(" per pipeline flush ({} accumulation rounds)", rounds) : "";
  switch (rule) {
    case LayoutRule::kTpHeads:
      return fmt::format("{} attention heads are not divisible by TP {}",
                         layer ? layer->attention.num_heads : 0, p.tp);
    case LayoutRule::kTpKvHeads:
      return fmt::format("{} KV heads (query groups) are not divisible by TP {}",
                         layer ? layer->attention.num_query_groups : 0, p.tp);
    case LayoutRule::kTpLinearHeads:
    case LayoutRule::kTpUnsupported:
      return linear_heads_message(job_.model, p.tp);
    case LayoutRule::kPpUnsupported:
      return fmt::format("Flux is built on one pipeline stage (PR9 model.py:203-209), got PP {}",
                         p.pp);
    case LayoutRule::kCpUnsupported:
      return cp_unsupported_message(job_, p.cp);
    case LayoutRule::kTpBeyondNode:
      return fmt::format(
          "TP {} spans more than one node of {} GPUs (--allow-tp-beyond-node / "
          "allow_tp_beyond_node to project it anyway)",
          p.tp, cl.gpus_per_node);
    case LayoutRule::kWorldDense:
      return fmt::format(
          "world size {} ({} nodes x {} GPUs) is not divisible by TP x PP x CP = "
          "{} x {} x {} = {}",
          world_, cl.nodes, cl.gpus_per_node, p.tp, p.pp, p.cp,
          static_cast<std::int64_t>(p.tp) * p.pp * p.cp);
    case LayoutRule::kNotMoe:
      return fmt::format("expert parallelism {} on a model without experts", p.ep);
    case LayoutRule::kExpertsEp: {
      int experts = 0;
      for (const LayerSpec& l : job_.model.layers) experts = l.is_moe ? l.moe.num_experts : experts;
      return fmt::format("{} experts are not divisible by EP {}", experts, p.ep);
    }
    case LayoutRule::kWorldExpert:
      return fmt::format("world size {} is not divisible by ETP x EP x PP = {} x {} x {} = {}",
                         world_, p.etp, p.ep, p.pp, static_cast<std::int64_t>(p.etp) * p.ep * p.pp);
    case LayoutRule::kSeqCp:
      if (p.cp <= 1 || rt.seq_length % (2 * p.cp) == 0) {
        // The rule's own fact: the largest compress ratio of the model.
        return fmt::format(
            "sequence length {} is not a multiple of the compress ratio {} (DeepSeek-V4's "
            "compressor pools whole windows)",
            rt.seq_length, rule_facts(job_, RulePurpose::kStated, world_).seq_multiple);
      }
      return fmt::format(
          "sequence length {} is not divisible by 2 x CP = {} (load-balanced "
          "context parallelism)",
          rt.seq_length, 2 * p.cp);
    case LayoutRule::kGbs:
      return fmt::format("global batch {} is not divisible by micro_batch_size x DP = {} x {} = {}",
                         rt.global_batch_size, rt.micro_batch_size, job_.dp(), per_step);
    case LayoutRule::kScheduleVpp:
      return fmt::format(
          "schedule {} does not fit VPP {} (interleaved needs >= 2, the V-shape "
          "schedules exactly 2, the others 1)",
          to_string(rt.schedule), p.vpp);
    case LayoutRule::kInterleavedMicrobatches:
      return fmt::format(
          "{} microbatches{} are not a multiple of PP {}: the interleaved schedule "
          "requires it",
          m / rounds, per_round, p.pp);
    case LayoutRule::kDualPipeMicrobatches:
      return fmt::format("dualpipev needs at least 2 x PP = {} microbatches{}, got {}", 2 * p.pp,
                         per_round, m / rounds);
    case LayoutRule::kSplitBackwardRecompute:
      return fmt::format(
          "schedule {} splits the backward into B and W and cannot be combined "
          "with full recompute",
          to_string(rt.schedule));
    case LayoutRule::kScheduleWidenedTransfer:
      return fmt::format(
          "schedule {} at PP {}: attention residuals (Kimi-K3) widen the stage transfer only for "
          "1F1B and interleaved 1F1B; Primus refuses the others (kimi_k3_pp_shape_patches.py)",
          to_string(rt.schedule), p.pp);
    default:
      return std::string(explanation(rule));
  }
}

}  // namespace

std::string JobDraft::key(DraftField f) const {
  const FieldOrigin& o = origin(f);
  return o.key.empty() ? std::string(to_string(f)) : o.key;
}

std::string_view to_string(DraftField f) {
  static constexpr std::string_view kNames[] = {"model",
                                                "tp",
                                                "pp",
                                                "vpp",
                                                "cp",
                                                "ep",
                                                "etp",
                                                "layer_split",
                                                "sequence_parallel",
                                                "distributed_optimizer",
                                                "overlap_grad_reduce",
                                                "overlap_param_gather",
                                                "tp_comm_overlap",
                                                "fsdp",
                                                "micro_batch_size",
                                                "global_batch_size",
                                                "seq_length",
                                                "flash_attention",
                                                "fp8_recipe",
                                                "grad_reduce_dtype",
                                                "attention_dropout",
                                                "hidden_dropout",
                                                "vocab_padding",
                                                "recompute",
                                                "recompute_modules",
                                                "loss_grad_in_place",
                                                "schedule",
                                                "hardware",
                                                "nodes",
                                                "gpus_per_node",
                                                "dp",
                                                "mesh",
                                                "kernel_gap_fraction",
                                                "moe_overlap",
                                                "host_dispatch"};
  static_assert(std::size(kNames) == kNumDraftFields);
  const auto i = static_cast<std::size_t>(f);
  return i < std::size(kNames) ? kNames[i] : "?";
}

DraftField field_of(LayoutRule rule) {
  switch (rule) {
    case LayoutRule::kTpHeads:
    case LayoutRule::kTpKvHeads:
    case LayoutRule::kTpLinearHeads:
    case LayoutRule::kTpUnsupported:
    case LayoutRule::kTpBeyondNode:
    case LayoutRule::kWorldDense:
      return DraftField::kTp;
    case LayoutRule::kLayers:
    case LayoutRule::kLayerSplit:
      return DraftField::kLayerSplit;
    case LayoutRule::kNotMoe:
    case LayoutRule::kExpertsEp:
    case LayoutRule::kWorldExpert:
      return DraftField::kEp;
    case LayoutRule::kSeqCp:
      return DraftField::kSeqLength;
    case LayoutRule::kCpUnsupported:
      return DraftField::kCp;
    case LayoutRule::kPpUnsupported:
      return DraftField::kPp;
    case LayoutRule::kGbs:
      return DraftField::kGlobalBatchSize;
    case LayoutRule::kScheduleNeedsPp:
      return DraftField::kPp;
    case LayoutRule::kScheduleVpp:
    case LayoutRule::kInterleavedMicrobatches:
    case LayoutRule::kDualPipeMicrobatches:
    case LayoutRule::kSplitBackwardRecompute:
    case LayoutRule::kScheduleWidenedTransfer:
      return DraftField::kSchedule;
    case LayoutRule::kRecomputeBlock:
      return DraftField::kRecompute;
    case LayoutRule::kWorldSize:
      return DraftField::kNodes;
    case LayoutRule::kMoeOverlapDispatcher:
      return DraftField::kMoeOverlap;
    case LayoutRule::kSizes:
    case LayoutRule::kLegal:
    case LayoutRule::kCount:
      break;
  }
  return DraftField::kModel;
}

JobSpec finalize_job(const JobDraft& draft, const ClusterRequest& cluster) {
  return Builder(draft).build(cluster);
}

}  // namespace projector
