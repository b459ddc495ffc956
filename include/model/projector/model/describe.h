// Human-readable summaries of a job's model: decoder layers compressed into runs of identical
// layers ("layers 3-60 (58x): MLA 128 heads ...; MoE 256 experts top-8 ...").
#pragma once

#include <string>
#include <vector>

#include "projector/model/job.h"

namespace projector {

// One line describing a layer's attention and MLP / MoE.
std::string describe_layer(const LayerSpec& layer);

struct LayerRun {
  int first = 0;  // first decoder layer (0-based)
  int count = 0;
  std::string description;  // describe_layer() of every layer in the run
};
// Consecutive layers with identical descriptions, in order.
std::vector<LayerRun> layer_runs(const ModelSpec& model);

// Stages grouped the same way: "stage 0 (rank 0, chunk 0): layers 0-3 + embedding".
std::string describe_stage(const VirtualStage& stage);

}  // namespace projector
