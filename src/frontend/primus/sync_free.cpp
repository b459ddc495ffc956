// Primus-Turbo's sync-free MoE stages (primus_turbo.h).
#include "projector/frontend/primus_turbo.h"

namespace projector {

SyncFreeMoeOptions sync_free_moe_options(int stage) {
  SyncFreeMoeOptions o;
  o.permute_fusion = stage >= 1;
  o.turbo_deepep = stage >= 2;
  o.host_sync_free = stage >= 2;
  return o;
}

}  // namespace projector
