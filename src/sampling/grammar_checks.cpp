// The checks a parsed grammar must pass before it is matched: every referenced rule defined,
// no left recursion, and some text that matches (alternatives that can match none are dropped).
// Left recursion (a rule that can reach itself without consuming a character) would make the
// matcher expand rules without end, so it is rejected here; the check runs in time linear in the
// grammar's size and recurses on nothing.
#include <algorithm>

#include "sampling/grammar_compiler.h"
#include "util/error.h"

namespace hearth {

void GrammarCompiler::check_defined() const {
  for (const RuleInfo& r : rules_)
    if (!r.defined) fail_at(r.first_ref.value_or(0), fmt::format("undefined rule '{}'", r.name));
}

bool GrammarCompiler::matches_nothing(const GrammarElement& e) const {
  return e.op == GrammarOp::kCharSet && sets_[e.a].empty();
}

// Which rules can match the empty string (kEmpty) or some text (kSomeText): the least fixed
// point, by propagation (each alternative counts the references it still waits on), so linear
// in the grammar's size. A character blocks an alternative from matching empty; only a class
// that matches no character blocks it from matching text.
std::vector<bool> GrammarCompiler::rules_matching(Match what) const {
  std::vector<bool> matches(rules_.size(), false);
  std::vector<uint32_t> alt_rule, alt_waiting;              // per alternative
  std::vector<std::vector<uint32_t>> users(rules_.size());  // alternatives referencing a rule
  std::vector<uint32_t> ready;                              // rules just found to match
  const auto mark = [&](uint32_t rule) {
    if (!matches[rule]) {
      matches[rule] = true;
      ready.push_back(rule);
    }
  };
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    const auto& body = rules_[r].body;
    size_t i = 0;
    while (i < body.size()) {  // one alternative per turn
      const auto alt = static_cast<uint32_t>(alt_rule.size());
      uint32_t waiting = 0;
      bool blocked = false;
      for (; !is_end_op(body[i].op); ++i) {
        if (body[i].op == GrammarOp::kRuleRef) {
          ++waiting;
          users[body[i].a].push_back(alt);
        } else {
          blocked = blocked || what == Match::kEmpty || matches_nothing(body[i]);
        }
      }
      ++i;
      alt_rule.push_back(r);
      // A blocked alternative never matches: it waits on one more than it has.
      alt_waiting.push_back(blocked ? waiting + 1 : waiting);
      if (!blocked && waiting == 0) mark(r);
    }
  }
  while (!ready.empty()) {
    const uint32_t rule = ready.back();
    ready.pop_back();
    for (uint32_t alt : users[rule])
      if (--alt_waiting[alt] == 0) mark(alt_rule[alt]);
  }
  return matches;
}

// An alternative that can match no text (a class that matches no character, a reference to a
// rule that matches none) is dropped, so that every stack the matcher keeps alive can still
// complete: generation is never led into a dead end that the grammar shows in advance. A root
// that matches no text is refused.
void GrammarCompiler::drop_dead_alternatives(uint32_t root) {
  const std::vector<bool> live = rules_matching(Match::kSomeText);
  if (!live[root])
    fail_at(rules_[root].def_offset,
            "no text matches this grammar (every alternative of 'root' needs a character class "
            "that matches no character, or a rule that matches no text)");
  const auto alive = [&](const GrammarElement& e) {
    return e.op == GrammarOp::kRuleRef ? live[e.a] : !matches_nothing(e);
  };
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    if (!live[r]) continue;  // no longer referenced by any alternative that is kept
    std::vector<GrammarElement> kept;
    const auto& body = rules_[r].body;
    for (size_t begin = 0; begin < body.size();) {
      size_t end = begin;
      while (!is_end_op(body[end].op)) ++end;
      if (std::all_of(body.begin() + begin, body.begin() + end, alive)) {
        if (!kept.empty()) kept.push_back({GrammarOp::kAlt, 0, 0});
        kept.insert(kept.end(), body.begin() + begin, body.begin() + end);
      }
      begin = end + 1;
    }
    kept.push_back({GrammarOp::kEnd, 0, 0});
    rules_[r].body = std::move(kept);
  }
}

void GrammarCompiler::check_left_recursion() const {
  const std::vector<bool> nullable = rules_matching(Match::kEmpty);
  // Edge r -> s: some alternative of r references s after only nullable references.
  std::vector<std::vector<uint32_t>> edges(rules_.size());
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    bool at_start = true;  // nothing consumed since the alternative began
    for (const GrammarElement& e : rules_[r].body) {
      if (is_end_op(e.op)) {
        at_start = true;
      } else if (!at_start) {
        continue;
      } else if (e.op == GrammarOp::kRuleRef) {
        edges[r].push_back(e.a);
        at_start = nullable[e.a];
      } else {
        at_start = false;
      }
    }
  }
  // Depth-first search without recursion; an edge back to a rule on the path is a cycle.
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(rules_.size(), kNew);
  std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge to follow)
  for (uint32_t start = 0; start < rules_.size(); ++start) {
    if (state[start] != kNew) continue;
    path.push_back({start, 0});
    state[start] = kOnPath;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next == edges[rule].size()) {
        state[rule] = kDone;
        path.pop_back();
        continue;
      }
      const uint32_t to = edges[rule][next++];
      if (state[to] == kNew) {
        state[to] = kOnPath;
        path.push_back({to, 0});
      } else if (state[to] == kOnPath) {
        std::string cycle;
        const auto first =
            std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == to; });
        for (auto it = first; it != path.end(); ++it) cycle += rules_[it->first].name + " -> ";
        fail_at(rules_[to].def_offset,
                fmt::format("left recursion: {}{} can repeat without consuming a character", cycle,
                            rules_[to].name));
      }
    }
  }
}

}  // namespace hearth
