// The engine: continuous batching over one paged KV pool. Every step forms one batch of a
// decode token for each running sequence plus prefill chunks of newer ones up to a token
// budget, so a long prompt is interleaved with others' decoding instead of blocking it.
// Sequences join and leave between steps; when the pool runs out, the newest running sequence
// is preempted (its blocks freed, recomputed later — exact, because the forward pass is batch-
// and chunk-invariant). Cancellation takes effect at the next step boundary.
// What each step computes is the scheduler's policy (engine/scheduler.h); the engine gives it
// the facts, applies its plan (blocks, preemption), runs the batch and samples.
// Every sequence's KV state (its blocks, the prefix cache, the disk tier) is the KV manager's
// (kv/kv_manager.h): the engine asks it for room, hands it finished and preempted sequences.
// A request's life is one status on its sequence (engine/sequence.h): Waiting in waiting_,
// Running or Completing in running_, then Finished; finish() is its end as the client hears it,
// release() the one way its KV state goes back, sweep() the one place it leaves its queue.
// Next-turn warming is a request at background priority (engine_warm.cpp); drafting is a
// property of a decoding sequence (engine_speculation.cpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/draft_model.h"
#include "engine/grammar_vocab.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/speculation.h"
#include "kv/kv_manager.h"
#include "model/batch_forward.h"
#include "ops/thread_pool.h"
#include "sampling/vocab_access.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

struct EngineOptions {
  int max_running = 8;  // sequences in the running set
  int max_queued = 64;  // waiting sequences; beyond: submit() answers busy
  // Tokens per step (decode tokens + prefill chunks), counted at depth 0: a chunk deep in a
  // prompt takes fewer tokens, as its attention costs more (engine/step_cost.h). Small steps
  // cost little throughput and bound how long a new request waits behind a long prompt: the
  // step in flight when it arrives (measured, Qwen3-0.6B Q8_0, 8 arrivals during a 2,000-token
  // prefill, 32 tokens: TTFT 1.33-1.54x idle median, 1.54-1.78x worst with chunks sized by cost,
  // 1.29-1.67x and 1.85-2.26x by token count; the long prompt's own TTFT 10.0-10.5 s against
  // 9.3-9.6 s. At 48 tokens by count, on another machine: 2.29x and 3.52x).
  int64_t step_tokens = 32;
  int64_t max_seq_tokens = 4096;  // context per sequence (prompt + generation)
  TensorType kv_type = TensorType::F16;
  int64_t kv_block_tokens = 32;
  size_t kv_bytes = 0;       // 0: room for max_running full contexts
  bool prefix_cache = true;  // reuse KV across requests (kv/prefix_cache.h)
  std::string cache_dir;     // disk tier for evicted blocks; empty: none
  uint64_t cache_disk_max = 8ull << 30;
  bool cache_shared = false;  // cache_dir is shared by several servers: write blocks through
  // Hybrid models: the recurrent-state snapshots' budget (0: half the KV budget, at least one
  // snapshot per sequence slot) and their finest interval in tokens (kv/kv_manager.h).
  size_t snapshot_bytes = 0;
  int64_t snapshot_interval = 16;
  // Speculative decoding (engine/speculation.h); off by itself on models with recurrent layers,
  // whose state cannot be rolled back past a rejected draft.
  SpecOptions spec;
  // SpecMode::Draft: the draft model (same vocabulary, no recurrent layers); it must outlive
  // the engine.
  const Model* draft_model = nullptr;
  // Next-turn warming (GenerationRequest::warm): the most warm requests kept waiting; a newer
  // one pushes out the oldest.
  int max_warm = 4;
};

// A snapshot for metrics and introspection.
struct EngineMetrics {
  int running = 0, queued = 0;
  int warming = 0;  // warm requests submitted and not finished (not in `running` or `queued`)
  int32_t kv_blocks = 0, kv_blocks_free = 0;
  int64_t kv_blocks_cache_only = 0;  // held by the prefix cache alone (reclaimable)
  size_t kv_bytes_per_token = 0;     // the main blocks (full-attention layers)
  // Models with sliding-window layers: their window blocks (kv/kv_manager.h); zeros otherwise.
  int32_t kv_window_blocks = 0, kv_window_blocks_free = 0;
  int64_t kv_window_blocks_cache_only = 0;
  size_t kv_window_bytes_per_token = 0;
  size_t state_slot_bytes = 0;  // one sequence's (or snapshot's) recurrent state; 0: none
  PrefixCacheStats cache;
  DiskTierStats disk;
  int64_t prompt_tokens = 0, cached_tokens = 0, prefilled_tokens = 0, generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t draft_tokens = 0, draft_accepted = 0;  // speculative decoding
  // Next-turn warming: tokens computed by warm requests (not in prefilled_tokens), those of
  // them a later request found in the cache, and those never used (dropped from the record
  // of the last 64 warm requests, or whose conversation moved on elsewhere, without a hit).
  int64_t warm_tokens = 0, warm_hit_tokens = 0, warm_wasted_tokens = 0;
};

struct SubmitResult {
  int64_t id = -1;                // -1 when refused
  std::string error;              // why (queue full, invalid request)
  int64_t prompt_tokens = 0;      // once tokenized (also when refused for the context)
  bool context_exceeded = false;  // refused by the request's context_limit
  bool grammar_refused = false;   // the grammar cannot start with this vocabulary
  bool busy = false;              // refused for the queue's limit (retry later)
  bool ok() const { return id >= 0; }
};

class Engine {
 public:
  Engine(const Model& model, const Tokenizer& tokenizer, EngineOptions options,
         ops::ThreadPool& pool);
  ~Engine();

  SubmitResult submit(GenerationRequest request);  // thread-safe
  void cancel(int64_t id);                         // thread-safe; unknown ids are ignored

  // Synchronous driving (tests, `hearth run`): one scheduler step; false when idle.
  bool step();
  void run_until_idle();

  // Background driving (the server): a thread that steps while there is work.
  void start();
  void stop();

  const BlockPool& kv_pool() const { return kv_.pool(); }
  // Thread-safe snapshot (updated at every step boundary).
  EngineMetrics metrics() const;
  // Blocks held by the prefix cache alone; free + these = all blocks when nothing runs.
  int64_t cache_only_blocks() const { return kv_.cache_only_blocks(); }
  size_t kv_bytes_per_token() const { return kv_.bytes_per_token(); }
  // Thread-safe, as of the last step boundary: sequences running (warm ones included) and
  // requests waiting (warm ones not).
  int running() const;
  int queued() const;
  // Most sequences decoded together (EngineOptions::max_running; the server's slots).
  int max_running() const { return opt_.max_running; }

 private:
  struct Sequence;
  struct Row;
  enum class SeqStatus : uint8_t;
  using Clock = std::chrono::steady_clock;

  void take_inbox();
  // The pieces of a step, in order.
  void drop_cancelled();
  void admit();
  void run_batch();
  void prepare_completing();
  void schedule_warm();
  bool admit_warm(Sequence& s);
  void record_warm(const Sequence& s);
  void count_warm_hits(const Sequence& s);
  void propose_drafts();
  void draft_follows(const std::vector<Row>& rows);
  StepPlan plan_step();
  bool allocate(StepPlan& plan);
  void give_way(const Shortage& shortage, StepPlan& plan);
  std::vector<Row> resolve(const StepPlan& plan);
  bool forward(const std::vector<Row>& rows, std::vector<SeqBatch>& batch);
  void fail_step(const std::vector<Row>& rows, const std::string& error);
  void consume(const std::vector<Row>& rows, const std::vector<SeqBatch>& batch);
  bool sample(Sequence& s, std::span<const float> logits, const int32_t* draft = nullptr);
  void verify(Sequence& s, std::span<const float> logits);
  SeqFacts facts(const Sequence& s) const;
  std::vector<SeqFacts> facts_of(SeqStatus status) const;
  Sequence* find(int64_t id);
  int count(SeqStatus status, bool background) const;
  int n_running() const;
  bool any_completing() const;

  // A request's end, as its client hears it (once), then release().
  void finish(Sequence& s, FinishReason reason, const std::string& error = "");
  // The one way a sequence gives back its KV state, whatever its end: a finished turn is cached
  // (and stays Completing while its last token still has to go through the model), anything
  // else is cached as far as it was computed, or discarded when its contents are not trusted
  // (a failed forward pass). It is then Finished, and sweep() takes it out of its queue.
  enum class KvEnd : uint8_t { Turn, Cache, Discard };
  void release(Sequence& s, KvEnd how);
  void sweep();
  void preempt(Sequence& s);
  void requeue(Sequence& s);
  bool continues_completing(const Sequence& s) const;
  // The sequence's cached state is the KV manager's (kv/kv_manager.h); these say what it reads.
  static SeqView kv_view(const Sequence& s);
  void attach_cached_prefix(Sequence& s);
  PromptSplits prompt_splits(const Sequence& s) const;
  void adopt_text_hit(Sequence& s, const TextHit& hit);
  void publish_metrics();

  const Model& model_;
  const Tokenizer& tok_;
  VocabAccess vocab_access_;    // what samplers need of the vocabulary
  LazyTokenTrie grammar_trie_;  // the vocabulary for constrained sampling, built on first use
  EngineOptions opt_;
  Scheduler sched_;
  bool speculate_ = false;  // opt_.spec is on and the model can roll back a rejected draft
  BatchForward fwd_;
  std::vector<float> logits_;  // the last step's logits, reused: no allocation per step
  KvManager kv_;               // blocks, prefix cache, disk tier: every sequence's cached state
  std::unique_ptr<DraftModel> draft_;  // --spec draft: the draft model and its own K/V

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Submitted requests the engine's thread has not taken yet (the only state shared with
  // submit()), and cancellations.
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::vector<int64_t> cancels_;
  int64_t next_id_ = 1;
  int pending_ = 0;       // submitted and not finished (for admission)
  int warm_pending_ = 0;  // warm requests submitted and not finished (guarded by mu_)

  // Every request the engine's thread holds is in one of two queues, as its status says
  // (engine/sequence.h): waiting_ (Waiting: in arrival order, preempted and set-aside ones at
  // the front; background ones are passed over while any other waits) or running_ (Running and
  // Completing). Finished ones are swept out at once.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;
  int64_t admit_counter_ = 0;
  // What finished warm requests computed: each one's tokens and the position its computing
  // began, until a later request hits it (counted once) or it is pushed out (wasted).
  struct WarmRecord {
    std::vector<int32_t> tokens;
    int64_t from = 0;
  };
  std::deque<WarmRecord> warm_records_;

  std::thread thread_;
  bool stop_ = false;
  EngineMetrics metrics_;      // guarded by mu_
  int published_running_ = 0;  // guarded by mu_: n_running() at the last step boundary
  EngineMetrics totals_;       // engine thread only
};

}  // namespace hearth
