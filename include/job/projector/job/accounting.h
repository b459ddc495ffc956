// The model's accounting over a whole job (model/accounting.h counts a model's layers; these
// read the job's batch, layout and precision too): FLOPs of an iteration and the bytes of a saved
// tensor on one rank.
#pragma once

#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/saved_tensors.h"

namespace projector {

// tokens = global_batch_size x seq_length; vocabulary padded by make_vocab_size_divisible_by x tp.
ModelFlops model_flops(const JobSpec& job, const FlopOptions& options = {});
// MaxText's count of one iteration (maxtext_utils.py calculate_tflops_training_per_device, summed
// over devices): 3 x forward with causal-halved attention, the output layer counted, recompute
// excluded, each MTP module counted without its embedding projection and logits.
double maxtext_flops(const JobSpec& job);

// Bytes of one tensor of the saved-tensor vocabulary (model/saved_tensors.h) for one microbatch
// on one rank: T = mbs x seq / cp tokens, heads and MLP columns over TP, the residual stream over
// TP with sequence parallelism, routed-expert tensors for the T x topk (x capacity factor) tokens
// this rank's experts receive with balanced routing; `context` includes the fp32 logsumexp.
// 0 for a tensor the layer does not have (latents without MLA, MoE tensors of a dense layer).
double layer_tensor_bytes(const JobSpec& job, const LayerSpec& layer, LayerTensor t);

}  // namespace projector
