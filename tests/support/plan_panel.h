// Helpers of the planning-panel tests (tests/plan_panel*_e2e_test.cc): `fulcrum plan --json`
// through the real binary on the shipped catalog, with an empty offers.d so that a user's own
// offers never change an answer. Header-only; for gtest test bodies.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_binary.h"

namespace fulcrum::testing {

inline RunOptions NoUserOffers() {
  RunOptions o;
  static const std::string empty = MakeTempDir("panel-offers-d");
  o.env["FULCRUM_OFFERS_DIR"] = empty;
  return o;
}

// `fulcrum plan ARGS --json`, its exit code checked; {} when it printed nothing.
inline nlohmann::json Plan(std::vector<std::string> args, int expected_exit = 0) {
  args.insert(args.begin(), "plan");
  args.push_back("--json");
  RunOutput r = RunFulcrum(args, NoUserOffers());
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  if (r.out.empty()) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

inline std::vector<std::string> With(std::vector<std::string> a,
                                     const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Whether candidate `c` carries warning `code`.
inline bool Warns(const nlohmann::json& c, const std::string& code) {
  return std::find(c["warnings"].begin(), c["warnings"].end(), code) != c["warnings"].end();
}

}  // namespace fulcrum::testing
