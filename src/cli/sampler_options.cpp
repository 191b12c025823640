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

}  // namespace

void add_sampler_options(CLI::App* app, SamplerParams& p) {
  const std::string g = "Sampling";
  app->add_option("--temp", p.temperature, "temperature (<= 0: greedy)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--dynatemp-range", p.dynatemp_range, "dynamic temperature range (0: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--dynatemp-exp", p.dynatemp_exponent, "dynamic temperature exponent")
      ->capture_default_str()
      ->group(g);
  app->add_option("--top-k", p.top_k, "top-k (<= 0: off)")->capture_default_str()->group(g);
  app->add_option("--top-p", p.top_p, "top-p (1: off)")->capture_default_str()->group(g);
  app->add_option("--min-p", p.min_p, "min-p (0: off)")->capture_default_str()->group(g);
  app->add_option("--typical", p.typical_p, "locally typical p (1: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--top-nsigma", p.top_n_sigma, "top-n-sigma (<= 0: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--xtc-probability", p.xtc_probability, "XTC probability (0: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--xtc-threshold", p.xtc_threshold, "XTC threshold (> 0.5: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--repeat-last-n", p.repeat_last_n,
                  "tokens the penalties look back over (0: off, -1: all)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--repeat-penalty", p.repeat_penalty, "repeat penalty (1: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--presence-penalty", p.presence_penalty, "presence penalty (0: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--frequency-penalty", p.frequency_penalty, "frequency penalty (0: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--dry-multiplier", p.dry_multiplier, "DRY multiplier (0: off)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--dry-base", p.dry_base, "DRY base (< 1: 1.75)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--dry-allowed-length", p.dry_allowed_length,
                  "DRY: repeats up to this long are free")
      ->capture_default_str()
      ->group(g);
  app->add_option("--dry-penalty-last-n", p.dry_penalty_last_n,
                  "DRY: tokens to look back over (0: off, -1: all)")
      ->capture_default_str()
      ->group(g);
  app->add_option_function<std::vector<std::string>>(
         "--dry-sequence-breaker",
         [&p](const std::vector<std::string>& v) {
           p.dry_sequence_breakers.clear();
           for (const auto& b : v)
             if (b != "none") p.dry_sequence_breakers.push_back(b);
         },
         "DRY sequence breaker (repeatable; replaces the defaults \\n : \" *; 'none': none)")
      ->group(g);
  app->add_option("--mirostat", p.mirostat, "Mirostat: 0 off, 1 Mirostat, 2 Mirostat 2.0")
      ->capture_default_str()
      ->group(g);
  app->add_option("--mirostat-lr", p.mirostat_eta, "Mirostat learning rate (eta)")
      ->capture_default_str()
      ->group(g);
  app->add_option("--mirostat-ent", p.mirostat_tau, "Mirostat target entropy (tau)")
      ->capture_default_str()
      ->group(g);
  app->add_option_function<std::vector<std::string>>(
         "--logit-bias",
         [&p](const std::vector<std::string>& v) {
           for (const auto& s : v) p.logit_bias.push_back(parse_logit_bias(s));
         },
         "TOKEN(+/-)BIAS, e.g. 15043+1 or 15043-inf (repeatable)")
      ->group(g);
  app->add_option_function<int64_t>(
         "--seed",
         [&p](int64_t s) {
           if (s < -1) throw CLI::ValidationError("--seed", "must be >= 0, or -1 for random");
           p.seed = s == -1 ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(s));
         },
         "random seed (-1: random)")
      ->group(g);
  app->add_option("--min-keep", p.min_keep, "truncating samplers keep at least this many")
      ->capture_default_str()
      ->group(g);
  app->add_option("--n-probs", p.n_probs, "report the top n token log-probabilities")
      ->capture_default_str()
      ->group(g);
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
      ->group(g);
}

}  // namespace hearth::cli
