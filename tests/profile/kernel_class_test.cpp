// Kernel names as the vendor libraries and PyTorch emit them (copied from the fixture traces and
// from the libraries' naming schemes) and the class each belongs to.
#include "projector/profile/kernel_class.h"

#include <gtest/gtest.h>

namespace projector::profile {
namespace {

struct Case {
  const char* name;
  const char* collective;
  KernelClass want;
};

TEST(KernelClass, NamesFromTheVendorLibraries) {
  const Case cases[] = {
      // cuBLAS / cuBLASLt / CUTLASS, hipBLASLt (Tensile), CK, Triton
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       "", KernelClass::kGemm},
      {"nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "", KernelClass::kGemm},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>",
       "", KernelClass::kGemm},
      {"Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1", "",
       KernelClass::kGemm},
      {"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<>>", "",
       KernelClass::kGemm},
      {"triton_tem_fused_addmm_mul_silu_view_1", "", KernelClass::kGemm},
      {"void splitKreduce_kernel<float, float, float, float, true, false>", "", KernelClass::kGemm},
      // grouped (MoE) GEMMs; a GEMM library namespace alone is not grouped
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>",
       "", KernelClass::kGroupedGemm},
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>", "",
       KernelClass::kGemm},
      {"void dpsk::grouped_gemm::cuda::utils::transpose<512, 128, 4, 4>(unsigned char const*)", "",
       KernelClass::kElementwise},
      {"ck::kernel_grouped_gemm_xdl_splitk<ck::GridwiseGemm>", "", KernelClass::kGroupedGemm},
      // attention: PyTorch flash, FA3 (a cutlass::device_kernel), cuDNN SDPA, CK / Triton fmha
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128>>", "",
       KernelClass::kAttentionFwd},
      {"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>", "",
       KernelClass::kAttentionBwd},
      {"void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>>>", "",
       KernelClass::kAttentionBwd},
      {"void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<>>>", "",
       KernelClass::kAttentionBwd},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128", "",
       KernelClass::kAttentionFwd},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_6", "",
       KernelClass::kAttentionBwd},
      {"fmha_fwd_d128_bf16_batch_b128x128x32_r1x4x1_w32x32x16_qr_async_vc", "",
       KernelClass::kAttentionFwd},
      {"fmha_bwd_d128_bf16_b128x128x64_kr_ktr_vr_iglp", "", KernelClass::kAttentionBwd},
      {"attn_fwd", "", KernelClass::kAttentionFwd},
      {"_attn_bwd_dkdv", "", KernelClass::kAttentionBwd},
      // collectives: NCCL / RCCL by name or by Kineto's "Collective name"; DeepEP
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "",
       KernelClass::kAllReduce},
      {"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "_allgather_base",
       KernelClass::kAllGather},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "",
       KernelClass::kReduceScatter},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "", KernelClass::kSendRecv},
      {"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "",
       KernelClass::kBroadcast},
      {"void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*)", "",
       KernelClass::kAllToAll},
      {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>", "",
       KernelClass::kAllReduce},
      // norms, rope, activation, casts, loss, router, permute, embedding, conv
      {"void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16>>", "",
       KernelClass::kNorm},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>", "",
       KernelClass::kNorm},
      {"rotary_kernel", "", KernelClass::kRope},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
       "namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const>",
       "", KernelClass::kActivation},
      {"void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128>(__nv_bfloat16 const*)",
       "", KernelClass::kCast},
      {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native:"
       ":mse_backward_cuda_kernel(at::TensorIterator&)>>",
       "", KernelClass::kLoss},
      {"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>", "",
       KernelClass::kRouter},
      {"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long>", "",
       KernelClass::kEmbedding},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "",
       KernelClass::kConvolution},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>", "",
       KernelClass::kSoftmax},
      {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
       "namespace)::TensorListMetadata<4>, FusedAdamMathFunctor<float, 4>>",
       "", KernelClass::kOptimizer},
      {"cuda::unique_group_indices_impl(long*, int, int, int)", "", KernelClass::kOther},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(classify_kernel(c.name, c.collective), c.want) << c.name;
  }
}

// PyTorch's kernel names are full of "lambda" and "...WithCast" template arguments: neither may
// pull an ordinary elementwise kernel into the optimizer or cast classes.
TEST(KernelClass, TemplateArgumentsDoNotDecideTheClass) {
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4, "
                            "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3>, "
                            "{lambda()#2}, at::native::memory::LoadWithCast<2>>"),
            KernelClass::kElementwise);
}

TEST(KernelClass, CostClassMapping) {
  CostClass c;
  ASSERT_TRUE(cost_class_of(KernelClass::kRope, c));
  EXPECT_EQ(c, CostClass::kElementwise);  // the workload prices RoPE as an elementwise op
  ASSERT_TRUE(cost_class_of(KernelClass::kEmbedding, c));
  EXPECT_EQ(c, CostClass::kPermute);  // embedding lookup is a gather
  EXPECT_FALSE(cost_class_of(KernelClass::kMemcpy, c));
  EXPECT_FALSE(cost_class_of(KernelClass::kOther, c));
  EXPECT_TRUE(is_collective(KernelClass::kAllToAll));
  EXPECT_EQ(collective_kind(KernelClass::kReduceScatter), CollectiveKind::kReduceScatter);
}

}  // namespace
}  // namespace projector::profile
