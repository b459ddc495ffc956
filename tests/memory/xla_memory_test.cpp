// The memory of a whole-step compiled (JAX / XLA) job, RuntimeSpec::whole_step_compiled
// (docs/tpu.md "XLA memory"): weights stored in weight_dtype without a master copy, the
// gathered-weight window of one array at a time, saved tensors by the remat policy, the head
// freed before the layers' backward, XLA's rematerialisation to the HBM limit, and the static
// worst-case receive buffer of dropless expert-parallel dispatch. Also MaxText's FLOP convention.
#include <gtest/gtest.h>

#include "projector/frontend/loader.h"
#include "projector/job/accounting.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

JobSpec load(testing::TempDir& dir, const std::string& text,
             const std::string& hardware = "tpu_v5p") {
  LoadRequest r;
  r.config_path = dir.write("mt.yml", text);
  r.data_dir = kData;
  r.env = fixed_environment({});
  r.hardware = hardware;
  return load_job(r);
}

const RankMemory& peak(const MemoryReport& m) {
  return m.ranks[static_cast<std::size_t>(m.peak_rank)];
}

double component(const MemoryReport& m, MemoryComponent c) {
  return peak(m).point[static_cast<std::size_t>(c)];
}

constexpr const char* kLlama =
    "model_name: llama3-8b\nper_device_batch_size: 2\nmax_target_length: 4096\n"
    "compile_topology: v5p-64\n";

// fp32 weights without a master copy; bf16 weight_dtype halves the weights, no master either.
TEST(XlaMemory, WeightsWithoutMasterCopy) {
  testing::TempDir dir;
  const JobSpec fp32 = load(dir, kLlama);
  const MemoryReport m32 = project_memory(fp32);
  EXPECT_EQ(component(m32, MemoryComponent::kMasterWeights), 0.0);
  const JobSpec bf16 = load(dir, std::string(kLlama) + "weight_dtype: bfloat16\n");
  const MemoryReport m16 = project_memory(bf16);
  EXPECT_NEAR(component(m16, MemoryComponent::kWeights) * 2.0,
              component(m32, MemoryComponent::kWeights), 1.0);
  // FSDP over 32 devices: the weights are sharded.
  const double params = model_params(fp32.model).total;
  EXPECT_NEAR(component(m32, MemoryComponent::kWeights), params * 4.0 / 32.0, params * 0.01);
}

// More saved tensors, more activations; full keeps only the layer inputs.
TEST(XlaMemory, RematPoliciesOrderTheActivations) {
  testing::TempDir dir;
  const double full =
      component(project_memory(load(dir, std::string(kLlama) + "remat_policy: full\n")),
                MemoryComponent::kActivations);
  const double qkv =
      component(project_memory(load(dir, std::string(kLlama) + "remat_policy: save_qkv_proj\n")),
                MemoryComponent::kActivations);
  const double minimal =
      component(project_memory(load(dir, std::string(kLlama) + "remat_policy: minimal\n")),
                MemoryComponent::kActivations);
  EXPECT_LT(full, qkv);
  EXPECT_LT(qkv, minimal);
  // Offloaded tensors leave the device.
  const double off = component(
      project_memory(load(dir, std::string(kLlama) + "remat_policy: qkv_proj_offloaded\n")),
      MemoryComponent::kActivations);
  EXPECT_NEAR(off, full, full * 1e-9);
}

// A step that would not fit rematerialises its working set down to the GEMM outputs: the peak
// meets the HBM and the verdict is not OOM while the floor fits. MaxText's 22B on TPU v4
// (maxtext-v4-22b in the calibration runs: it ran with 32 GiB).
TEST(XlaMemory, CompilerRematerialisesToTheLimit) {
  testing::TempDir dir;
  const JobSpec j = load(dir,
                         "base_emb_dim: 6144\nbase_num_query_heads: 24\nbase_num_kv_heads: 24\n"
                         "base_mlp_dim: 24576\nbase_num_decoder_layers: 48\nhead_dim: 256\n"
                         "vocab_size: 32768\nmlp_activations: [relu]\nlogits_via_embedding: true\n"
                         "per_device_batch_size: 16\nremat_policy: full\nmax_target_length: 2048\n"
                         "compile_topology: v4-128\n",
                         "");
  const MemoryReport m = project_memory(j);
  const double hbm = j.cluster.accelerator.hbm_bytes;
  EXPECT_EQ(peak(m).transient_source, "working set rematerialised by XLA to the HBM limit");
  EXPECT_NEAR(m.peak_point_bytes, hbm, hbm * 1e-6);
  EXPECT_NE(m.verdict, MemoryVerdict::kOom);
  // The same job not compiled keeps its natural working set: out of memory.
  JobSpec eager = j;
  eager.runtime.whole_step_compiled = false;
  EXPECT_GT(project_memory(eager).peak_point_bytes, hbm);
}

// Dropless expert-parallel dispatch in static shapes: the worst-case receive buffer costs memory
// and two passes over it per MoE layer.
TEST(XlaMemory, StaticDispatchBuffer) {
  testing::TempDir dir;
  const std::string base =
      "model_name: mixtral-8x7b\nper_device_batch_size: 1\nmax_target_length: 4096\n"
      "ici_expert_parallelism: 8\ncompile_topology: v5p-64\n";
  const JobSpec ragged = load(dir, base);
  EXPECT_DOUBLE_EQ(ragged.runtime.moe_static_recv_factor, 4.0);  // min(EP 8, 8 experts / top-2)
  const JobSpec sorted = load(dir, base + "use_ragged_sort: true\n");
  EXPECT_DOUBLE_EQ(sorted.runtime.moe_static_recv_factor, 0.0);
  const JobSpec deepep = load(dir, base + "use_turbo_deepep_dispatch: true\n");
  EXPECT_DOUBLE_EQ(deepep.runtime.moe_static_recv_factor, 8.0);  // tokens x EP
  EXPECT_GT(project_memory(deepep).peak_upper_bytes, project_memory(sorted).peak_upper_bytes);
  bool sort = false;
  for (const LayerWork& lw : build_workload(ragged).ranks[0].chunks[0].blocks) {
    for (const Op& op : lw.ops) sort = sort || op.name == "moe.static_sort";
  }
  EXPECT_TRUE(sort);
  EXPECT_GT(project_performance(ragged).iteration_s, project_performance(sorted).iteration_s);
}

// MaxText's TFLOP/s convention (maxtext_utils.py calculate_tflops_training_per_device) for a
// dense model: 3 x (weight GEMMs + unembedding) + 3 x causal-halved attention, per token.
TEST(XlaMemory, MaxTextFlopConvention) {
  testing::TempDir dir;
  const JobSpec j = load(dir, kLlama);
  const double B = j.runtime.global_batch_size, S = j.runtime.seq_length;
  const double e = 4096, q = 32, kv = 8, d = 128, mlp = 14336, V = 128256, L = 32;
  const double ffn = 2 * B * S * mlp * e * 2 + 2 * B * S * mlp * e;
  const double qkv = 2 * B * S * e * (q + 2 * kv) * d;
  const double proj = 2 * B * S * e * q * d;
  const double attn = 4 * B * S * S * q * d / 2;
  const double emb = 2 * B * S * e * V;
  const double want = 3 * (L * (ffn + qkv + proj) + emb) + 3 * L * attn;
  EXPECT_NEAR(maxtext_flops(j), want, want * 1e-9);
  const PerfReport p = project_performance(j);
  EXPECT_NEAR(p.logged_tflops_per_gpu,
              want / p.iteration_s / static_cast<double>(j.cluster.world_size()) / 1e12,
              p.logged_tflops_per_gpu * 1e-6);
}

// Issue 30: a MaxText job that does not fit is told what to change in MaxText's own keys, and
// only changes that lower the peak are listed (a Megatron "full recompute (uniform, 1 layer)"
// once raised a fully rematerialised MaxText job's peak). 8B with per_device_batch_size 6 on
// 8 x 16 GiB v5e chips.
TEST(XlaMemory, RemediesSpeakMaxTextAndLowerThePeak) {
  testing::TempDir dir;
  const JobSpec j = load(dir,
                         "model_name: llama3-8b\nper_device_batch_size: 6\n"
                         "max_target_length: 4096\nremat_policy: minimal\n"
                         "compile_topology: v5e-8\n",
                         "tpu_v5e");
  const MemoryReport m = project_memory(j);
  ASSERT_NE(m.verdict, MemoryVerdict::kFits);
  ASSERT_FALSE(m.remedies.empty());
  bool remat = false, batch = false;
  for (const MemoryRemedy& r : m.remedies) {
    EXPECT_LT(r.peak_point_bytes, 0.99 * m.peak_point_bytes) << r.change;
    EXPECT_EQ(r.change.find("recompute"), std::string::npos) << r.change;
    EXPECT_EQ(r.change.find("distributed optimizer"), std::string::npos) << r.change;
    remat = remat || r.change == "remat_policy: full";
    // 6 per device -> 3 per device with 2 accumulation steps (the global batch 48 kept).
    batch = batch || r.change == "per_device_batch_size: 3, gradient_accumulation_steps: 2";
  }
  EXPECT_TRUE(remat);
  EXPECT_TRUE(batch);
}

}  // namespace
}  // namespace projector
