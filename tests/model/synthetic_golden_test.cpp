// Synthetic llama / qwen2 / qwen3 models in every weight type against the float64 reference.
// hearth's reference path dequantizes weights and keeps activations in f32, so it is held to
// 1e-3 on the logits for every type (see ../shared/golden/synthetic/README.md).
#include <gtest/gtest.h>

#include <iostream>

#include "golden_util.h"
#include "model/reference_forward.h"
#include "sampling/basic_sampler.h"

namespace hearth {
namespace {

using test::ids_of;
using test::load_json;
using test::max_abs_diff;

class SyntheticGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticGolden, LogitsAndTeacherForcedGreedyMatchReference) {
  HEARTH_GOLDEN_AND_MODEL_OR_SKIP(g, model, "synthetic", GetParam());
  EXPECT_EQ(model->hparams().arch_name, g["architecture"].get<std::string>());
  for (const auto& [name, type] : g["tensor_types"].items()) {
    const gguf::TensorInfo* t = model->file().find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(type_name(t->type), type.get<std::string>()) << name;
  }
  constexpr double kTol = 1e-3;
  double worst = 0.0;
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::vector<int32_t> prompt = ids_of(c["prompt_ids"]);
    ReferenceForward fwd(*model, 512);
    std::vector<float> logits = fwd.eval(prompt);
    auto [d0, i0] = max_abs_diff(logits, c["reference_logits"]["last_prompt_position"]["logits"]);
    EXPECT_LT(d0, kTol) << "last prompt position, token " << i0;
    worst = std::max(worst, d0);

    const std::vector<int32_t> gen = ids_of(c["generation"]["ids"]);
    const std::vector<int32_t> ref_greedy =
        ids_of(c["crosscheck"]["reference_greedy_ids_teacher_forced"]);
    const auto& steps = c["generation"]["steps"];
    ASSERT_EQ(ref_greedy.size(), gen.size());
    for (size_t s = 0; s < gen.size(); ++s) {
      const double margin = steps[s]["ref_top1_top2_logit_margin"].get<double>();
      if (margin > 1e-3) {
        EXPECT_EQ(argmax(logits), ref_greedy[s]) << "step " << s;
      }
      if (s == 8 && !c["reference_logits"]["after_8_generated"].is_null()) {
        auto [d8, i8] = max_abs_diff(logits, c["reference_logits"]["after_8_generated"]["logits"]);
        EXPECT_LT(d8, kTol) << "after 8 generated, token " << i8;
        worst = std::max(worst, d8);
      }
      const int32_t one[1] = {gen[s]};  // teacher-forced on llama.cpp's tokens
      if (s + 1 < gen.size()) logits = fwd.eval(one);
    }
  }
  std::cout << "[ measured ] " << GetParam() << ": max |logit - float64 reference| = " << worst
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(AllModels, SyntheticGolden,
                         ::testing::Values("llama-tied-F32", "llama-tied-Q4_K", "llama-tied-Q6_K",
                                           "llama-tied-Q8_0", "llama-untied-F32",
                                           "llama-untied-Q4_K", "llama-untied-Q6_K",
                                           "llama-untied-Q8_0", "qwen2-F32", "qwen2-Q4_K",
                                           "qwen2-Q6_K", "qwen2-Q8_0", "qwen3-BF16", "qwen3-F16",
                                           "qwen3-F32", "qwen3-Q4_0", "qwen3-Q4_1", "qwen3-Q4_K",
                                           "qwen3-Q5_0", "qwen3-Q5_1", "qwen3-Q5_K", "qwen3-Q6_K",
                                           "qwen3-Q8_0"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace hearth
