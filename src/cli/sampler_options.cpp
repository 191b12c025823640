#include "cli/sampler_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "util/error.h"

namespace hearth::cli {
namespace {

// "15043+1", "15043-0.5", "15043-inf"
LogitBias parse_logit_bias(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i >= s.size() || (s[i] != '+' && s[i] != '-') || i + 1 >= s.size())
    throw CLI::ValidationError(
        "--logit-bias", "expected TOKEN(+/-)BIAS such as 15043+1 or 15043-inf, got '" + s + "'");
  const std::string value = s.substr(i + 1);
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || std::isnan(v))
    throw CLI::ValidationError("--logit-bias", "'" + value + "' is not a number in '" + s + "'");
  const long long token = std::atoll(s.substr(0, i).c_str());
  if (token > INT32_MAX) throw CLI::ValidationError("--logit-bias", "token id too large: " + s);
  return {static_cast<int32_t>(token), s[i] == '-' ? -v : v};
}

constexpr const char* kGroup = "Sampling";  // the --help section of every flag here

// A plain value flag whose help shows the current value as the default.
template <typename T>
void add_value(CLI::App* app, const std::string& flag, T& value, const std::string& help) {
  app->add_option(flag, value, help)->capture_default_str()->group(kGroup);
}

void add_truncation_options(CLI::App* app, SamplerParams& p) {
  add_value(app, "--temp", p.temperature, "temperature (<= 0: greedy)");
  add_value(app, "--dynatemp-range", p.dynatemp_range, "dynamic temperature range (0: off)");
  add_value(app, "--dynatemp-exp", p.dynatemp_exponent, "dynamic temperature exponent");
  add_value(app, "--top-k", p.top_k, "top-k (<= 0: off)");
  add_value(app, "--top-p", p.top_p, "top-p (1: off)");
  add_value(app, "--min-p", p.min_p, "min-p (0: off)");
  add_value(app, "--typical", p.typical_p, "locally typical p (1: off)");
  add_value(app, "--top-nsigma", p.top_n_sigma, "top-n-sigma (<= 0: off)");
  add_value(app, "--xtc-probability", p.xtc_probability, "XTC probability (0: off)");
  add_value(app, "--xtc-threshold", p.xtc_threshold, "XTC threshold (> 0.5: off)");
}

void add_penalty_options(CLI::App* app, SamplerParams& p) {
  add_value(app, "--repeat-last-n", p.repeat_last_n,
            "tokens the penalties look back over (0: off, -1: all)");
  add_value(app, "--repeat-penalty", p.repeat_penalty, "repeat penalty (1: off)");
  add_value(app, "--presence-penalty", p.presence_penalty, "presence penalty (0: off)");
  add_value(app, "--frequency-penalty", p.frequency_penalty, "frequency penalty (0: off)");
}

void add_dry_options(CLI::App* app, SamplerParams& p) {
  add_value(app, "--dry-multiplier", p.dry_multiplier, "DRY multiplier (0: off)");
  add_value(app, "--dry-base", p.dry_base, "DRY base (< 1: 1.75)");
  add_value(app, "--dry-allowed-length", p.dry_allowed_length,
            "DRY: repeats up to this long are free");
  add_value(app, "--dry-penalty-last-n", p.dry_penalty_last_n,
            "DRY: tokens to look back over (0: off, -1: all)");
  app->add_option_function<std::vector<std::string>>(
         "--dry-sequence-breaker",
         [&p](const std::vector<std::string>& v) {
           p.dry_sequence_breakers.clear();
           for (const auto& b : v)
             if (b != "none") p.dry_sequence_breakers.push_back(b);
         },
         "DRY sequence breaker (repeatable; replaces the defaults \\n : \" *; 'none': none)")
      ->group(kGroup);
}

void add_mirostat_options(CLI::App* app, SamplerParams& p) {
  add_value(app, "--mirostat", p.mirostat, "Mirostat: 0 off, 1 Mirostat, 2 Mirostat 2.0");
  add_value(app, "--mirostat-lr", p.mirostat_eta, "Mirostat learning rate (eta)");
  add_value(app, "--mirostat-ent", p.mirostat_tau, "Mirostat target entropy (tau)");
}

void add_logit_bias_and_seed(CLI::App* app, SamplerParams& p) {
  app->add_option_function<std::vector<std::string>>(
         "--logit-bias",
         [&p](const std::vector<std::string>& v) {
           for (const auto& s : v) p.logit_bias.push_back(parse_logit_bias(s));
         },
         "TOKEN(+/-)BIAS, e.g. 15043+1 or 15043-inf (repeatable)")
      ->group(kGroup);
  app->add_option_function<int64_t>(
         "--seed",
         [&p](int64_t s) {
           if (s < -1) throw CLI::ValidationError("--seed", "must be >= 0, or -1 for random");
           p.seed = s == -1 ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(s));
         },
         "random seed (-1: random)")
      ->group(kGroup);
}

void add_output_and_order_options(CLI::App* app, SamplerParams& p) {
  add_value(app, "--min-keep", p.min_keep, "truncating samplers keep at least this many");
  add_value(app, "--n-probs", p.n_probs, "report the top n token log-probabilities");
  app->add_option_function<std::string>(
         "--samplers",
         [&p](const std::string& s) {
           try {
             p.samplers = parse_sampler_stages(s, "--samplers");
           } catch (const Error& e) {
             throw CLI::ValidationError("--samplers", e.what());
           }
         },
         "stage order, e.g. \"penalties;dry;top_k;top_p;min_p;temperature\"")
      ->group(kGroup);
}

}  // namespace

// In --help order.
void add_sampler_options(CLI::App* app, SamplerParams& p) {
  add_truncation_options(app, p);
  add_penalty_options(app, p);
  add_dry_options(app, p);
  add_mirostat_options(app, p);
  add_logit_bias_and_seed(app, p);
  add_output_and_order_options(app, p);
}

}  // namespace hearth::cli
