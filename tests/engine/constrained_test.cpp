// Constrained decoding through the engine: every reply of a request with a grammar is a whole
// match of it, whatever the seed and temperature; the reply ends where the grammar does (the
// end-of-generation token is forced once nothing else can follow); and a constrained request
// changes nothing for the unconstrained ones batched with it.
#include <gtest/gtest.h>

#include <regex>

#include "common/shared_data.h"
#include "engine/engine.h"
#include "sampling/json_schema_grammar.h"

namespace hearth {
namespace {

struct Reply {
  std::vector<int32_t> tokens;
  std::string text, error;
  FinishReason reason = FinishReason::Stop;
  bool finished = false;
};

class Constrained : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_SHARED_OR_SKIP(path, "models/synthetic/qwen3-Q8_0.gguf");
    model_ = Model::load(path);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
    EngineOptions o;
    o.max_seq_tokens = 512;
    engine_ = std::make_unique<Engine>(*model_, *tok_, o, pool_);
  }
  GenerationRequest request(const std::string& grammar, float temp, uint64_t seed, Reply* r) {
    GenerationRequest q;
    q.prompt = {1, 300, 301, 302, 303};
    q.max_tokens = 40;
    q.temperature = temp;
    q.seed = seed;
    if (!grammar.empty()) q.grammar = std::make_shared<const Grammar>(Grammar::parse(grammar));
    q.on_event = [r](const EngineEvent& e) {
      r->text += e.text;
      if (e.kind == EngineEvent::Kind::Token) {
        r->tokens.push_back(e.token);
      } else {
        r->finished = true;
        r->reason = e.reason;
        r->error = e.error;
      }
    };
    return q;
  }
  Reply run(const std::string& grammar, float temp, uint64_t seed,
            const std::string& trigger = "") {
    Reply r;
    GenerationRequest q = request(grammar, temp, seed, &r);
    q.grammar_trigger = trigger;
    EXPECT_TRUE(engine_->submit(std::move(q)).ok());
    engine_->run_until_idle();
    EXPECT_TRUE(r.finished);
    return r;
  }

  ops::ThreadPool pool_{2};
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(Constrained, EveryReplyIsAWholeMatch) {
  const std::string g = R"g(root ::= "(" word (" " word){0,3} ")"
word ::= [a-z]{1,6})g";
  const std::regex whole(R"(\([a-z]{1,6}( [a-z]{1,6}){0,3}\))");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Reply r = run(g, 1.0f, seed);
    EXPECT_EQ(r.reason, FinishReason::Stop) << "seed " << seed << ": " << r.error;
    EXPECT_TRUE(std::regex_match(r.text, whole)) << "seed " << seed << ": '" << r.text << "'";
    ASSERT_FALSE(r.tokens.empty());
    EXPECT_TRUE(tok_->is_eog(r.tokens.back())) << "the grammar's end forces end-of-generation";
  }
}

TEST_F(Constrained, GreedyIsDeterministicAndNumbersMatch) {
  const std::string g = R"g(root ::= "[" num ("," num){2} "]"
num ::= "-"? [1-9] [0-9]{0,3})g";
  const std::regex whole(R"(\[-?[1-9][0-9]{0,3}(,-?[1-9][0-9]{0,3}){2}\])");
  const Reply a = run(g, 0.0f, 1), b = run(g, 0.0f, 2);
  EXPECT_TRUE(std::regex_match(a.text, whole)) << a.text;
  EXPECT_EQ(a.tokens, b.tokens);
}

// The byte-fallback tokens let a grammar ask for any byte, control characters included (a
// vocabulary that cannot continue a grammar is tested with the constraint itself, in
// tests/sampling/grammar_constraint_test.cpp).
TEST_F(Constrained, ByteTokensSatisfyAnyByte) {
  const Reply r = run("root ::= \"\\x01\\x02\" [a-z]", 0.8f, 3);
  EXPECT_EQ(r.reason, FinishReason::Stop) << r.error;
  ASSERT_EQ(r.text.size(), 3u) << r.text;
  EXPECT_EQ(r.text.substr(0, 2), "\x01\x02");
  EXPECT_TRUE(r.text[2] >= 'a' && r.text[2] <= 'z') << r.text;
}

TEST_F(Constrained, UnconstrainedNeighboursAreUnchanged) {
  const Reply alone = run("", 0.9f, 7);
  Reply plain, constrained;
  ASSERT_TRUE(engine_->submit(request("root ::= [a-z ]{1,30} \".\"", 0.9f, 5, &constrained)).ok());
  ASSERT_TRUE(engine_->submit(request("", 0.9f, 7, &plain)).ok());
  engine_->run_until_idle();
  EXPECT_EQ(plain.tokens, alone.tokens);
  EXPECT_TRUE(std::regex_match(constrained.text, std::regex(R"([a-z ]{1,30}\.)")))
      << constrained.text;
}

// A lazy grammar (tool_choice "auto"): the reply is free, exactly as without a grammar, until
// the trigger text appears; from the trigger on it matches the grammar.
TEST_F(Constrained, LazyGrammarAppliesFromItsTrigger) {
  int applied = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Reply free = run("", 1.0f, seed);
    ASSERT_GE(free.tokens.size(), 8u);
    // The trigger: two generated tokens' text, so the free run shows where it first appears.
    const std::string trigger =
        tok_->token_to_piece(free.tokens[4], true) + tok_->token_to_piece(free.tokens[5], true);
    const size_t at = free.text.find(trigger);
    if (trigger.empty() || at == std::string::npos) continue;  // bytes of a split character
    const std::string g = "root ::= " + gbnf_literal(trigger) + " \" <\" [0-9]{1,3} \">\"";
    const Reply lazy = run(g, 1.0f, seed, trigger);
    ASSERT_EQ(lazy.reason, FinishReason::Stop) << lazy.error;
    const size_t end = at + trigger.size();
    EXPECT_EQ(lazy.text.substr(0, end), free.text.substr(0, end)) << "free before the trigger";
    EXPECT_TRUE(std::regex_match(lazy.text.substr(end), std::regex(R"( <[0-9]{1,3}>)")))
        << "seed " << seed << ": '" << lazy.text << "'";
    ++applied;
  }
  EXPECT_GE(applied, 4);
  // A trigger that never appears leaves the reply free.
  const Reply none = run("root ::= \"zzz\"", 1.0f, 3, "\x01\x02never");
  EXPECT_EQ(none.text, run("", 1.0f, 3).text);
}

}  // namespace
}  // namespace hearth
