// The sweep over a MaxText job (sweep/space.cpp): remat policies as the recompute axis, the mesh
// re-laid out for each TP / PP / CP / EP (FSDP takes the rest of the slice), every candidate
// projected without failure.
#include <gtest/gtest.h>

#include <set>

#include "projector/frontend/loader.h"
#include "projector/frontend/maxtext.h"
#include "projector/job/mesh.h"
#include "projector/job/spec.h"
#include "projector/sweep/sweep.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

TEST(MaxTextSweep, RematPoliciesAndMeshAxes) {
  testing::TempDir dir;
  LoadRequest r;
  r.config_path = dir.write("mt.yml",
                            "model_name: mixtral-8x7b\nper_device_batch_size: 1\n"
                            "max_target_length: 4096\nremat_policy: save_qkv_proj\n"
                            "compile_topology: v5p-32\n");
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.env = fixed_environment({});
  const JobSpec base = load_job(r);
  sweep::Options o;
  o.threads = 1;
  const sweep::Result res = sweep::run_sweep(base, sweep::Grid{}, sweep::SpaceOptions{}, o);
  EXPECT_EQ(res.failed, 0u) << (res.failures.empty() ? "" : res.failures.front());
  ASSERT_GT(res.projected, 0u);
  std::set<std::string> remat;
  bool expert = false;
  for (const sweep::Entry& e : res.ranked) {
    remat.insert(sweep::to_string(e.candidate.recompute));
    expert = expert || e.candidate.ep > 1;
  }
  EXPECT_TRUE(remat.count("remat:base"));
  EXPECT_TRUE(remat.count("remat:full"));
  EXPECT_TRUE(remat.count("remat:minimal"));
  EXPECT_TRUE(expert);
  // A named policy is looked up in the job's framework's table: it gives that policy; an unknown
  // one is a grid error once the space is built.
  const sweep::Grid one = sweep::parse_grid("tp=1; pp=1; recompute=remat:save_dot_except_mlp");
  const sweep::Enumeration en = sweep::enumerate(base, one, sweep::SpaceOptions{});
  ASSERT_FALSE(en.legal.empty());
  for (const sweep::Candidate& c : en.legal) {
    EXPECT_EQ(sweep::to_string(c.recompute), "remat:save_dot_except_mlp");
    EXPECT_EQ(sweep::make_job(base, c, 0).runtime.recompute.tensors,
              maxtext::remat_policy("save_dot_except_mlp", nullptr).value());
  }
  EXPECT_THROW(sweep::enumerate(base, sweep::parse_grid("recompute=remat:nope"), {}), InputError);
}

}  // namespace
}  // namespace projector
