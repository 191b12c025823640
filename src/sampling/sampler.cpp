#include "sampling/sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>

#include "sampling/stages.h"
#include "util/error.h"

namespace hearth {
namespace {

bool lists(const SamplerParams& p, SamplerStage s) {
  return std::find(p.samplers.begin(), p.samplers.end(), s) != p.samplers.end();
}

bool penalties_active(const SamplerParams& p) {
  return p.mirostat == 0 && lists(p, SamplerStage::Penalties) && p.repeat_last_n != 0 &&
         (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
}

bool dry_active(const SamplerParams& p) {
  return p.mirostat == 0 && lists(p, SamplerStage::Dry) && p.dry_multiplier > 0.0f &&
         p.dry_penalty_last_n != 0;
}

uint64_t pick_seed(const SamplerParams& p) {
  if (p.seed) return *p.seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Sampler::Sampler(const SamplerParams& params, const VocabAccess& vocab)
    : p_(params),
      vocab_(vocab),
      n_vocab_(vocab.n_vocab),
      seed_(pick_seed(params)),
      rng_(seed_),
      mu_(2.0f * params.mirostat_tau),
      dry_base_(effective_dry_base(params)) {
  validate(p_);
  if (n_vocab_ <= 0) fail("sampler: the vocabulary size must be positive, got {}", n_vocab_);
  for (const auto& b : p_.logit_bias) {
    if (b.token >= n_vocab_)
      fail("logit_bias: token id {} is out of range (the vocabulary has {} tokens)", b.token,
           n_vocab_);
    auto it = std::find_if(bias_.begin(), bias_.end(),
                           [&](const LogitBias& x) { return x.token == b.token; });
    if (it == bias_.end()) {
      bias_.push_back(b);
    } else {
      it->bias += b.bias;
    }
  }
  std::sort(bias_.begin(), bias_.end(),
            [](const LogitBias& a, const LogitBias& b) { return a.token < b.token; });
  if (penalties_active(p_)) penalties_ = std::make_unique<PenaltyState>(n_vocab_, p_.repeat_last_n);
  if (dry_active(p_)) {
    if (!p_.dry_sequence_breakers.empty() && !vocab_.token_piece)
      fail("dry_sequence_breakers: the sampler was given no way to read token text");
    dry_ = std::make_unique<DryState>(p_.dry_allowed_length, p_.dry_penalty_last_n);
  }
}

bool Sampler::is_breaker(int32_t token) {
  if (p_.dry_sequence_breakers.empty()) return false;
  auto [it, fresh] = breaker_cache_.try_emplace(token, false);
  if (fresh) {
    const std::string piece = vocab_.token_piece(token);
    for (const auto& b : p_.dry_sequence_breakers)
      if (piece.find(b) != std::string::npos) it->second = true;
  }
  return it->second;
}

void Sampler::push_state(int32_t token) {
  if (penalties_) penalties_->push(token);
  if (dry_) dry_->push(token, is_breaker(token));
}

void Sampler::accept(int32_t token) {
  if (token < 0 || token >= n_vocab_)
    fail("sampler: accepted token {} is out of range (vocabulary of {})", token, n_vocab_);
  history_.push_back(token);
  push_state(token);
}

void Sampler::set_history(std::span<const int32_t> tokens) {
  for (int32_t t : tokens)
    if (t < 0 || t >= n_vocab_)
      fail("sampler: history token {} is out of range (vocabulary of {})", t, n_vocab_);
  const bool extends = tokens.size() >= history_.size() &&
                       std::equal(history_.begin(), history_.end(), tokens.begin());
  if (!extends) {  // shrunk or diverged: rebuild
    history_.clear();
    if (penalties_) penalties_->clear();
    if (dry_) dry_->clear();
  }
  for (size_t i = history_.size(); i < tokens.size(); ++i) {
    history_.push_back(tokens[i]);
    push_state(tokens[i]);
  }
}

void Sampler::apply_penalties(Candidates& c) const {
  const float rep = p_.repeat_penalty, freq = p_.frequency_penalty, pres = p_.presence_penalty;
  if (c.dense()) {
    if (penalties_->active().empty()) return;
    auto d = c.mutable_dense();
    for (int32_t t : penalties_->active()) {
      auto& x = d[static_cast<size_t>(t)];
      x = penalize(x, penalties_->count(t), rep, freq, pres);
    }
    return;
  }
  bool changed = false;
  for (auto& x : c.items()) {
    const int32_t n = penalties_->count(x.token);
    if (n > 0) {
      x.logit = penalize(x.logit, n, rep, freq, pres);
      changed = true;
    }
  }
  if (changed) c.set_sorted(false);
}

void Sampler::apply_dry(Candidates& c) {
  const auto matches = dry_->matches();
  if (matches.empty()) return;
  auto penalty = [&](int32_t length) {
    const float v =
        p_.dry_multiplier * std::pow(dry_base_, static_cast<float>(length - p_.dry_allowed_length));
    return std::min(v, FLT_MAX);  // a huge repeat: as good as banned, but finite
  };
  if (c.dense()) {
    auto d = c.mutable_dense();
    for (const auto& m : matches) d[static_cast<size_t>(m.token)] -= penalty(m.length);
    return;
  }
  for (auto& x : c.items()) {
    auto it = std::lower_bound(matches.begin(), matches.end(), x.token,
                               [](const DryMatch& m, int32_t t) { return m.token < t; });
    if (it != matches.end() && it->token == x.token) x.logit -= penalty(it->length);
  }
  c.set_sorted(false);
}

void Sampler::apply_logit_rewrites(std::span<const float> logits, std::span<float> out) {
  if (logits.size() != static_cast<size_t>(n_vocab_) || out.size() != logits.size())
    fail("sampler: expected {} logits, got {}", n_vocab_, logits.size());
  Candidates c;
  c.reset(logits);
  auto d = c.mutable_dense();
  for (const auto& b : bias_) d[static_cast<size_t>(b.token)] += b.bias;
  for (SamplerStage s : p_.samplers) {
    if (s == SamplerStage::Penalties && penalties_) apply_penalties(c);
    if (s == SamplerStage::Dry && dry_) apply_dry(c);
  }
  std::copy(c.dense_logits().begin(), c.dense_logits().end(), out.begin());
}

SampleResult Sampler::sample(std::span<const float> logits) {
  if (logits.size() != static_cast<size_t>(n_vocab_))
    fail("sampler: expected a row of {} logits, got {}", n_vocab_, logits.size());
  SampleResult r;
  Candidates& c = cand_;
  c.reset(logits);
  if (!bias_.empty()) {
    auto d = c.mutable_dense();
    for (const auto& b : bias_) d[static_cast<size_t>(b.token)] += b.bias;
  }
  const bool greedy = !(p_.temperature > 0.0f);
  const auto min_keep = static_cast<size_t>(p_.min_keep);
  if (greedy) {
    for (SamplerStage s : p_.samplers) {
      if (p_.mirostat != 0) break;  // Mirostat's chain is temperature first: argmax
      switch (s) {
        case SamplerStage::Penalties:
          if (penalties_) apply_penalties(c);
          break;
        case SamplerStage::Dry:
          if (dry_) apply_dry(c);
          break;
        case SamplerStage::TypicalP:  // the only deterministic stage that may drop the best
          apply_typical(c, p_.typical_p, min_keep);
          break;
        default:  // the others keep the best token, or are random
          break;
      }
    }
    r.token = pick_best(c);
  } else if (p_.mirostat != 0) {
    apply_temperature(c, p_.temperature, 0.0f, 1.0f);
    r.token = p_.mirostat == 1
                  ? sample_mirostat_v1(c, p_.mirostat_tau, p_.mirostat_eta, n_vocab_, mu_, rng_)
                  : sample_mirostat_v2(c, p_.mirostat_tau, p_.mirostat_eta, mu_, rng_);
  } else {
    for (SamplerStage s : p_.samplers) {
      switch (s) {
        case SamplerStage::Penalties:
          if (penalties_) apply_penalties(c);
          break;
        case SamplerStage::Dry:
          if (dry_) apply_dry(c);
          break;
        case SamplerStage::TopNSigma:
          apply_top_n_sigma(c, p_.top_n_sigma, min_keep);
          break;
        case SamplerStage::TopK:
          apply_top_k(c, p_.top_k, min_keep);
          break;
        case SamplerStage::TypicalP:
          apply_typical(c, p_.typical_p, min_keep);
          break;
        case SamplerStage::TopP:
          apply_top_p(c, p_.top_p, min_keep);
          break;
        case SamplerStage::MinP:
          apply_min_p(c, p_.min_p, min_keep);
          break;
        case SamplerStage::Xtc:
          apply_xtc(c, p_.xtc_probability, p_.xtc_threshold, min_keep, rng_);
          break;
        case SamplerStage::Temperature:
          apply_temperature(c, p_.temperature, p_.dynatemp_range, p_.dynatemp_exponent);
          break;
      }
    }
    const size_t idx = draw_index(c, rng_.uniform());
    r.token = c.items()[idx].token;
  }
  if (p_.n_probs > 0) {
    const float lse = logsumexp(logits);
    const float x = logit_key(logits[static_cast<size_t>(r.token)]);
    r.logprob = x == -INFINITY || lse == -INFINITY ? -INFINITY : x - lse;
    top_logprobs(logits, lse, static_cast<size_t>(p_.n_probs), r.top_logprobs);
  }
  return r;
}

}  // namespace hearth
