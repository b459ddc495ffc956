// Named device meshes (job/mesh.h).
#include "projector/job/mesh.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "projector/job/spec.h"

namespace projector {
namespace {

std::int64_t product(const std::vector<MeshAxis>& mesh, bool dcn) {
  std::int64_t p = 1;
  for (const MeshAxis& a : mesh) {
    const int v = dcn ? a.dcn : a.ici;
    if (v > 0) p *= v;
  }
  return p;
}

// Fills the one -1 of a group (ICI or DCN) so the group's product is `target`.
std::string fill_group(std::vector<MeshAxis>& mesh, bool dcn, std::int64_t target) {
  const char* group = dcn ? "DCN" : "ICI";
  int* unset = nullptr;
  for (MeshAxis& a : mesh) {
    int& v = dcn ? a.dcn : a.ici;
    if (v == -1) {
      if (unset != nullptr) {
        return fmt::format("more than one {} axis is -1 (at most one may be unspecified)", group);
      }
      unset = &v;
    } else if (v < 1) {
      return fmt::format("{} axis {} is {} (must be a positive integer or -1)", group, a.name, v);
    }
  }
  const std::int64_t others = product(mesh, dcn);
  if (unset != nullptr) {
    if (others <= 0 || target % others != 0) {
      return fmt::format(
          "the {} axes multiply to {} without the -1 axis, which does not divide "
          "the {} {}",
          group, others, target, dcn ? "slices" : "devices per slice");
    }
    *unset = static_cast<int>(target / others);
    return "";
  }
  if (others != target) {
    return fmt::format("the {} axes multiply to {} but there are {} {}", group, others, target,
                       dcn ? "slices" : "devices per slice");
  }
  return "";
}

// Indices of `k` physical axes (lexicographic combinations), as JAX's mesh_utils tries them.
bool next_combination(std::vector<int>& c, int n) {
  const int k = static_cast<int>(c.size());
  for (int i = k - 1; i >= 0; --i) {
    if (c[static_cast<std::size_t>(i)] < n - k + i) {
      ++c[static_cast<std::size_t>(i)];
      for (int j = i + 1; j < k; ++j) {
        c[static_cast<std::size_t>(j)] = c[static_cast<std::size_t>(j - 1)] + 1;
      }
      return true;
    }
  }
  return false;
}

bool assign_whole(MeshAxis& a, std::vector<int>& free) {
  const int n = static_cast<int>(free.size());
  for (int k = std::min(3, n); k >= 1; --k) {
    std::vector<int> c(static_cast<std::size_t>(k));
    std::iota(c.begin(), c.end(), 0);
    do {
      std::int64_t p = 1;
      for (int i : c) p *= free[static_cast<std::size_t>(i)];
      if (p == a.ici) {
        for (int i : c) {
          a.torus_axes.push_back(i);
          a.torus_extent.push_back(free[static_cast<std::size_t>(i)]);
          free[static_cast<std::size_t>(i)] = 0;
        }
        return true;
      }
    } while (next_combination(c, n));
  }
  return false;
}

// allow_split_physical_axes: a divisor of one physical axis, else factors of several.
bool assign_split(MeshAxis& a, std::vector<int>& free) {
  int best = -1;
  for (std::size_t i = 0; i < free.size(); ++i) {
    if (free[i] > 1 && free[i] % a.ici == 0 &&
        (best < 0 || free[i] > free[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(i);
    }
  }
  if (best >= 0) {
    a.torus_axes.push_back(best);
    a.torus_extent.push_back(a.ici);
    free[static_cast<std::size_t>(best)] /= a.ici;
    return true;
  }
  int left = a.ici;
  std::vector<int> order(free.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    return free[static_cast<std::size_t>(x)] > free[static_cast<std::size_t>(y)];
  });
  std::vector<int> axes, extents;
  std::vector<int> trial = free;
  for (int i : order) {
    const int g = std::gcd(left, std::max(1, trial[static_cast<std::size_t>(i)]));
    if (g <= 1) continue;
    axes.push_back(i);
    extents.push_back(g);
    trial[static_cast<std::size_t>(i)] /= g;
    left /= g;
  }
  if (left != 1) return false;
  a.torus_axes = axes;
  a.torus_extent = extents;
  free = trial;
  return true;
}

double spread(const std::vector<int>& dims) {
  const auto [lo, hi] = std::minmax_element(dims.begin(), dims.end());
  return static_cast<double>(*hi) / std::max(1, *lo);
}

}  // namespace

MeshSizes mesh_sizes(const std::vector<MeshAxis>& mesh) {
  MeshSizes s;
  s.devices = 1;
  for (const MeshAxis& a : mesh) {
    const int n = std::max(1, a.ici) * std::max(1, a.dcn);
    s.devices *= n;
    s.slices *= std::max(1, a.dcn);
    switch (a.role) {
      case MeshRole::kTensor:
        s.tp *= n;
        break;
      case MeshRole::kTensorSequence:
        s.tp *= n;
        s.tensor_sequence = s.tensor_sequence || n > 1;
        break;
      case MeshRole::kStage:
        s.pp *= n;
        break;
      case MeshRole::kContext:
        s.cp *= n;
        s.fsdp_shard *= n;
        break;
      case MeshRole::kExpert:
        s.ep *= n;
        s.dp *= n;
        s.fsdp_shard *= n;
        break;
      case MeshRole::kFsdp:
      case MeshRole::kFsdpTranspose:
        s.dp *= n;
        s.fsdp_shard *= n;
        break;
      case MeshRole::kData:
      case MeshRole::kOther:
        s.dp *= n;
        s.replicate *= n;
        break;
    }
  }
  return s;
}

std::string resolve_mesh(std::vector<MeshAxis>& mesh, std::int64_t devices_per_slice, int slices) {
  if (std::string e = fill_group(mesh, false, devices_per_slice); !e.empty()) return e;
  return fill_group(mesh, true, slices);
}

std::string place_mesh(std::vector<MeshAxis>& mesh, const std::vector<int>& slice_shape,
                       int devices_per_chip, const std::string& custom) {
  for (MeshAxis& a : mesh) {
    a.torus_axes.clear();
    a.torus_extent.clear();
  }
  if (slice_shape.empty()) return custom.empty() ? "" : "the accelerator has no torus";
  std::string why;
  if (!custom.empty()) {
    // max_utils.py is_valid_custom_mesh / create_custom_device_mesh: ICI sizes {1, ring, outer}
    // on a 16x16 slice, the ring axis after the outer one.
    const bool r64 = custom == "hybrid_ring_64x4";
    const bool r32 = custom == "hybrid_ring_32x8";
    std::vector<MeshAxis*> used;
    for (MeshAxis& a : mesh) {
      if (a.ici > 1) used.push_back(&a);
    }
    if (!r64 && !r32) {
      why = "unknown custom_mesh '" + custom + "'";
    } else if (slice_shape != std::vector<int>{16, 16} || devices_per_chip > 1) {
      why = custom + " needs a 16x16 slice";
    } else if (used.size() != 2 || used[0]->ici != (r64 ? 64 : 32) ||
               used[1]->ici != (r64 ? 4 : 8)) {
      why = custom + " needs ICI axes " + (r64 ? "64 then 4" : "32 then 8");
    } else {
      used[1]->torus_axes = {0, 1};
      used[1]->torus_extent = r64 ? std::vector<int>{2, 2} : std::vector<int>{2, 4};
      used[0]->torus_axes = {0, 1};
      used[0]->torus_extent = r64 ? std::vector<int>{8, 8} : std::vector<int>{8, 4};
      return "";
    }
  }
  std::vector<int> free = slice_shape;
  if (devices_per_chip > 1) free.push_back(devices_per_chip);
  for (auto it = mesh.rbegin(); it != mesh.rend(); ++it) {
    if (it->ici <= 1) continue;
    if (!assign_whole(*it, free)) assign_split(*it, free);
  }
  return why;
}

bool relayout_mesh(JobSpec& job) {
  ParallelSpec& p = job.parallel;
  if (p.mesh.empty()) return true;
  const ClusterSpec& cl = job.cluster;
  const int slices = std::max(1, cl.slices);
  const std::int64_t world = cl.world_size();
  if (world % slices != 0) return false;
  const std::int64_t per_slice = world / slices;
  const std::int64_t inner = static_cast<std::int64_t>(p.tp) * p.pp * p.cp * p.ep;
  if (inner < 1 || per_slice % inner != 0) return false;
  const int fsdp = static_cast<int>(per_slice / inner);
  std::vector<MeshAxis> mesh = {{MeshRole::kData, "data", 1, slices, {}, {}},
                                {MeshRole::kStage, "stage", p.pp, 1, {}, {}},
                                {MeshRole::kFsdp, "fsdp", fsdp, 1, {}, {}},
                                {MeshRole::kContext, "context", p.cp, 1, {}, {}},
                                {MeshRole::kTensor, "tensor", p.tp, 1, {}, {}},
                                {MeshRole::kExpert, "expert", p.ep, 1, {}, {}}};
  mesh.erase(std::remove_if(mesh.begin(), mesh.end(),
                            [](const MeshAxis& a) { return a.ici == 1 && a.dcn == 1; }),
             mesh.end());
  if (mesh.empty()) mesh.push_back({MeshRole::kData, "data", 1, 1, {}, {}});
  place_mesh(mesh, cl.slice_shape, cl.devices_per_chip);
  const MeshSizes s = mesh_sizes(mesh);
  p.mesh = std::move(mesh);
  p.dp_replicate = s.replicate;
  p.fsdp = s.fsdp_shard > 1 ? FsdpKind::kFsdp2 : FsdpKind::kNone;
  p.distributed_optimizer = false;
  p.sequence_parallel = s.tp > 1;
  p.etp = p.tp;
  return true;
}

std::vector<int> default_slice_shape(std::int64_t chips, const AcceleratorSpec& acc) {
  const int dims = acc.scaleup_topology == "torus" ? acc.torus_dims : 0;
  if (dims < 2 || chips < 1) return {};
  const bool cubes = dims == 3 && chips % 64 == 0;
  std::vector<int> best;
  for (std::int64_t a = 1; a * a <= chips; ++a) {
    if (chips % a != 0) continue;
    const std::int64_t rest = chips / a;
    if (dims == 2) {
      if (a > rest) continue;
      std::vector<int> c = {static_cast<int>(a), static_cast<int>(rest)};
      if (best.empty() || spread(c) < spread(best)) best = c;
      continue;
    }
    for (std::int64_t b = a; b * b <= rest; ++b) {
      if (rest % b != 0) continue;
      std::vector<int> c = {static_cast<int>(a), static_cast<int>(b), static_cast<int>(rest / b)};
      if (cubes && (a % 4 != 0 || b % 4 != 0 || (rest / b) % 4 != 0)) continue;
      if (best.empty() || spread(c) < spread(best)) best = c;
    }
  }
  return best;
}

std::vector<int> parse_slice_shape(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t x = text.find_first_of("xX", start);
    const std::string part = text.substr(start, x == std::string::npos ? x : x - start);
    if (part.empty() || part.size() > 6 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return {};
    }
    const int v = std::atoi(part.c_str());
    if (v < 1) return {};
    out.push_back(v);
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return out.size() >= 2 && out.size() <= 3 ? out : std::vector<int>{};
}

std::string to_string(const std::vector<int>& slice_shape) {
  std::string s;
  for (std::size_t i = 0; i < slice_shape.size(); ++i) {
    s += (i == 0 ? "" : "x") + std::to_string(slice_shape[i]);
  }
  return s;
}

}  // namespace projector
