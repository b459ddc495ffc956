// Discrete-event simulation of a pipeline schedule table (schedule.h).
//
// Model.
// * Each rank has one compute stream that runs its table's actions strictly in order, and one
//   stream per communicator name used by a CommTask on that rank (e.g. "dp"). Streams run their
//   tasks in launch order (FIFO), one at a time.
// * Durations per (rank, chunk): F = f_s, B = b_s, W = w_s, BW = b_s + w_s. Zero is allowed.
// * Dependencies: F of stage z+1 after F of z plus the forward P2P time of edge z; B/BW of z after
//   B/BW of z+1 plus the backward P2P time of edge z (the last stage: after its own F); W after its
//   own B; and table order on each rank. P2P transfers are asynchronous (they delay the receiver
//   but do not occupy either compute stream) unless blocking_p2p, where the sender's next action
//   waits for its send too; a hand-off between two stages on the same rank (the V-shape turn on
//   rank pp-1) is free.
// * Overlapped pairs (Action::overlap_with_next, DualPipeV): both actions start together once both
//   are ready and end together after
//     max(compute_a + compute_b, comm_a + comm_b) + serial_a + serial_b
//   where comm_x is the part of the action's duration that is communication which the other
//   action's computation can hide (ChunkCost::f_comm_s / b_comm_s, e.g. exposed EP all-to-all),
//   serial_x the compute that cannot serve as cover (ChunkCost::w_serial_s, BW and W only) and
//   compute_x the rest. With no comm parts this is just the sum. When the communication kernels
//   occupy a share s of the compute units (SimulationInput::pair_comm_compute_share, DeepEP's
//   SMs), compute under them runs on the rest: max(compute_a + compute_b + s (comm_a + comm_b),
//   comm_a + comm_b) + serial_a + serial_b.
// * Communication tasks (CommTask) run on their named stream of their rank. A task is launched at
//   iteration start or at the start / end of a given action and starts at
//   max(launch time, the stream's previous task end). It may block a later action of its rank (that
//   action cannot start before the task ends: param all-gather / FSDP prefetch).
// * Interference: while at least one communication task of a rank is in progress, that rank's
//   compute advances at 1 / (1 + interference) of its nominal speed (a 1 s action fully overlapped
//   by communication takes 1 + interference seconds). Communication itself is not slowed, and
//   overlap with several streams at once counts once. TP/EP communication inside a layer is not
//   modelled here: the caller folds its exposed part into the durations.
// * Activation memory per rank: an F adds ChunkCost::activation (one microbatch's activations of
//   that chunk, caller's units); a split B frees b_release_fraction of it; its W frees the rest
//   (W keeps its inputs until it runs); a BW frees it all.
// * Makespan = the latest end over all compute actions and communication tasks.
//
// An invalid table (an action missing or duplicated, W without a split B, a pair across ranks) or
// an impossible one (a dependency cycle: deadlock) throws ScheduleError; the simulator never hangs.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "projector/schedule/schedule.h"

namespace projector::schedule {

class ScheduleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ChunkCost {
  double f_s = 0.0;
  double b_s = 0.0;       // backward w.r.t. inputs (B)
  double w_s = 0.0;       // weight-gradient backward (W); BW takes b_s + w_s
  double f_comm_s = 0.0;  // part of f_s hideable behind another microbatch's compute (overlap)
  double b_comm_s = 0.0;  // part of b_s hideable likewise
  // Part of w_s that a pair partner's communication cannot hide behind: work that must finish
  // before this backward's own next communication (expert weight gradients when they are not
  // deferred, Megatron's delay_wgrad_compute off). Counted after the overlapped part.
  double w_serial_s = 0.0;
  double activation = 1.0;          // activation memory one microbatch leaves on this chunk
  double b_release_fraction = 0.0;  // part of it a split B frees (W frees the rest)
};

enum class CommTrigger { kIterationStart, kActionStart, kActionEnd };

struct CommTask {
  int rank = 0;
  std::string stream;  // communicator name, e.g. "dp"; must not be "compute"
  double duration_s = 0.0;
  CommTrigger trigger = CommTrigger::kIterationStart;
  int trigger_action = -1;  // index into table.rank_actions(rank); unused for kIterationStart
  int blocks_action = -1;   // index of an action of `rank` that waits for this task; -1: none
  std::string label;        // for the timeline; empty: the stream name
};

struct SimulationInput {
  std::vector<ChunkCost> costs;  // size pp * vpp, indexed [rank * vpp + chunk]
  double p2p_s = 0.0;            // default activation/gradient transfer time between stages
  // Optional per-edge overrides, size num_stages - 1 (edge z joins stage z and z + 1). Empty:
  // p2p_s everywhere. Backward empty: same as forward.
  std::vector<double> p2p_forward_s;
  std::vector<double> p2p_backward_s;
  std::vector<CommTask> comm;
  // Per rank (empty: none): compute the rank runs after its last action, once that action's sends
  // left and before the communication the action triggers at its end (Megatron's deferred
  // output-layer weight gradients, drained in the flush before the gradient reduction).
  std::vector<double> tail_s;
  // Sends hold the sender: after an action that sends to another rank, the rank's next action
  // starts only when the transfer is done (Megatron's waited P2P). false: the sender goes on.
  bool blocking_p2p = false;
  double interference = 0.0;
  double pair_comm_compute_share = 0.0;  // share of compute units the paired comm occupies, [0, 1]
  bool record_timeline = false;
};

struct RankStats {
  double busy_s = 0.0;           // compute time actually spent (incl. interference slow-down)
  double ideal_compute_s = 0.0;  // sum of nominal durations
  double idle_s = 0.0;           // makespan - busy
  double bubble_fraction = 0.0;  // idle / makespan
  double compute_end_s = 0.0;    // end of the rank's last action
  int peak_inflight = 0;         // max (chunk, microbatch) pairs whose F ran and W/BW did not
  double peak_activation = 0.0;  // max activation memory, ChunkCost::activation units
  // Communication (ChunkCost::f_comm_s / b_comm_s) hidden behind the partner's compute inside
  // overlapped pairs (combined 1F1B, DualPipeV): min(both parts' comm, both parts' compute).
  double pair_hidden_comm_s = 0.0;
  double p2p_blocked_s = 0.0;  // time the compute stream waited for its own sends (blocking_p2p)
};

struct StreamStats {
  std::string name;
  std::vector<double> busy_s;     // per rank
  std::vector<double> exposed_s;  // per rank: time the stream is busy while compute is idle
  double max_exposed_s = 0.0;
};

struct CriticalStep {
  enum class Kind { kCompute, kComm, kTail };  // kTail: a rank's SimulationInput::tail_s
  Kind kind = Kind::kCompute;
  int rank = 0;
  int index = 0;  // action index within the rank (kCompute), into input.comm (kComm), -1 (kTail)
  double start_s = 0.0;
  double end_s = 0.0;
};

struct TimelineEvent {
  int rank = 0;
  int stream = 0;  // index into SimulationResult::stream_names; 0 is "compute"
  std::string label;
  double start_s = 0.0;
  double end_s = 0.0;
  int chunk = -1;  // compute actions: the chunk and phase it runs (else -1)
  Phase phase = Phase::kF;
};

struct SimulationResult {
  double makespan_s = 0.0;
  double compute_makespan_s = 0.0;  // latest compute end (without communication tails)
  std::vector<RankStats> ranks;
  double max_bubble_fraction = 0.0;  // max over ranks of idle / makespan (Primus "max bubble")
  // (makespan - ideal) / ideal with ideal = the largest per-rank nominal compute: the classic
  // "bubble over ideal compute", e.g. (p-1)/m for balanced 1F1B.
  double bubble_over_ideal = 0.0;
  std::vector<std::string> stream_names;    // [0] = "compute", then communicators by first use
  std::vector<StreamStats> streams;         // one per communicator (stream_names[1..])
  std::vector<CriticalStep> critical_path;  // first to last
  std::vector<TimelineEvent> timeline;      // only with record_timeline; by rank, then start
};

SimulationResult simulate(const ScheduleTable& table, const SimulationInput& input);

// "F c0 mb3" style label of an action.
std::string action_label(const Action& action);

}  // namespace projector::schedule
