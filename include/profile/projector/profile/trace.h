// Reading a PyTorch profiler (Kineto) / Chrome trace: JSON or gzip-compressed JSON, streamed
// through a SAX parser so memory holds only the events a profile needs (GPU activities, kernel
// launches, step / phase / optimizer annotations, GEMM and attention operator shapes, allocator
// samples), never the document. Files over the limits below are refused with InputError.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace projector::profile {

// Upper bounds on what a trace may be (documented in docs/user-guide.md, "Measured profiles").
struct TraceLimits {
  std::uint64_t max_file_bytes = 2ull << 30;   // on disk (compressed or not): 2 GiB
  std::uint64_t max_json_bytes = 16ull << 30;  // decompressed JSON: 16 GiB
  std::uint64_t max_kept_events = 20'000'000;  // events kept in memory (about 1.5 GiB)
  // One JSON token (a string or a bare number / literal): the parser buffers a whole token, so
  // without this bound one 1 GiB string in an 18 MB gzip file costs gigabytes.
  std::uint64_t max_token_bytes = 16ull << 20;  // 16 MiB
  // Names, operator types and shapes the kept events hold (interned strings, dims).
  std::uint64_t max_kept_bytes = 1ull << 30;  // 1 GiB
};

enum class GpuActivity : std::uint8_t { kKernel, kMemcpy, kMemset };

// One GPU activity ("cat": "kernel" / "gpu_memcpy" / "gpu_memset").
struct GpuEvent {
  double ts_us = 0.0;
  double dur_us = 0.0;
  std::int64_t correlation = -1;  // args.correlation: the CPU launch of this activity
  std::int64_t external_id = -1;  // args["External id"]: the operator that launched it
  std::uint32_t name = 0;         // index into TraceData::names
  std::int32_t device = -1;
  std::int32_t stream = -1;
  GpuActivity activity = GpuActivity::kKernel;
  // Collective arguments Kineto records for NCCL/RCCL kernels (absent: 0 / -1).
  std::uint32_t collective_name = 0;  // args["Collective name"], interned (0: none)
  std::int32_t group_size = -1;       // args["Group size"]
  double message_bytes = -1.0;        // args["In msg nelems"] x element size of args.dtype
};

// A CPU-side runtime call that launched GPU work (cudaLaunchKernel, hipModuleLaunchKernel, ...).
struct Launch {
  double ts_us = 0.0;
  std::int64_t correlation = -1;
  std::int64_t tid = 0;
};

// A CPU or GPU span: step annotations, phase annotations, optimizer steps, autograd functions.
struct Span {
  double ts_us = 0.0;
  double dur_us = 0.0;
  std::int64_t tid = 0;
  std::uint32_t name = 0;
  double end_us() const { return ts_us + dur_us; }
};

// The input shapes of a GEMM or attention operator (record_shapes=True).
struct OperatorShapes {
  std::int64_t external_id = -1;
  std::uint32_t name = 0;
  std::vector<std::vector<std::int64_t>> dims;  // per input, flattened
  std::vector<std::string> types;               // per input, "c10::BFloat16", "float", ...
};

// A caching-allocator sample ("[memory]" instant event, profile_memory=True).
struct MemorySample {
  double ts_us = 0.0;
  double allocated_bytes = 0.0;  // args["Total Allocated"]
  double reserved_bytes = 0.0;   // args["Total Reserved"]
  int device_type = 0;           // 0: CPU
};

struct TraceData {
  std::string path;
  bool gzip = false;
  std::uint64_t json_bytes = 0;      // decompressed size read
  std::uint64_t events_total = 0;    // events in the file (kept or not)
  std::vector<std::string> names;    // interned strings; names[0] == ""
  std::vector<std::string> devices;  // deviceProperties[].name
  int rank = -1, world_size = -1;    // distributedInfo
  std::vector<GpuEvent> gpu;
  std::vector<Launch> launches;
  std::vector<Span> cpu_steps;        // "ProfilerStep#N" user annotations
  std::vector<Span> gpu_steps;        // "ProfilerStep#N" gpu_user_annotation
  std::vector<Span> optimizer_spans;  // "Optimizer.step#..." annotations
  std::vector<Span> phase_spans;      // user annotations whose name ends in (F), (B) or (W)
  std::vector<Span> backward_spans;   // "autograd::engine::evaluate_function: ..."
  std::vector<OperatorShapes> shapes;
  std::vector<MemorySample> memory;

  const std::string& name(std::uint32_t id) const { return names[id]; }
};

// Reads `path` (gzip detected from the content, not the name). Throws InputError naming the file
// (and the line for JSON syntax errors) when it is missing, too large, truncated or not a trace.
TraceData read_trace(const std::string& path, const TraceLimits& limits = {});

// The same from an in-memory document (tests, benchmarks); `label` stands for the file name.
TraceData parse_trace_text(const std::string& json, const std::string& label,
                           const TraceLimits& limits = {});

}  // namespace projector::profile
