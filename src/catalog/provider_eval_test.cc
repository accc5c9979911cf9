#include "catalog/provider_eval.h"

#include <gtest/gtest.h>

#include "catalog/testing_catalog.h"

namespace fulcrum::catalog {
namespace {

class ProviderEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = Catalog::FromFiles(testing::SmallCatalogFiles());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    catalog_ = std::move(loaded).value();
  }
  ProviderEvaluation Evaluate(const char* name) {
    return EvaluateProvider(*catalog_, *catalog_->FindProvider(name));
  }
  std::optional<Catalog> catalog_;
};

TEST_F(ProviderEvalTest, AllCriteriaMet) {
  ProviderEvaluation e = Evaluate("gcp");
  ASSERT_EQ(e.criteria.size(), 4u);
  for (const auto& c : e.criteria) EXPECT_NE(c.id, "");
  EXPECT_EQ(e.criteria[0].verdict, Verdict::kMet);  // 0.3 %/y
  EXPECT_DOUBLE_EQ(*e.criteria[0].value, 0.3);
  EXPECT_EQ(e.criteria[1].verdict, Verdict::kMet);  // best offer 800 Gbit/s
  EXPECT_DOUBLE_EQ(*e.criteria[1].value, 800);
  EXPECT_EQ(e.criteria[2].verdict, Verdict::kUnknown);  // billing not sourced
  EXPECT_FALSE(e.criteria[2].value.has_value());
  EXPECT_EQ(e.criteria[3].verdict, Verdict::kMet);  // 24x7, 10 min
}

TEST_F(ProviderEvalTest, NotMetWithTheFigures) {
  ProviderEvaluation e = Evaluate("slowco");
  EXPECT_EQ(e.criteria[0].verdict, Verdict::kNotMet);  // 0.9 %/y
  EXPECT_EQ(e.criteria[1].verdict, Verdict::kNotMet);  // 10 Gbit/s < 25
  EXPECT_DOUBLE_EQ(*e.criteria[1].value, 10);
  EXPECT_EQ(e.criteria[2].verdict, Verdict::kNotMet);  // hourly billing
  EXPECT_DOUBLE_EQ(*e.criteria[2].value, 3600);
  EXPECT_EQ(e.criteria[3].verdict, Verdict::kNotMet);  // no 24x7
}

TEST_F(ProviderEvalTest, UnknownStaysUnknown) {
  ProviderEvaluation aws = Evaluate("aws");
  EXPECT_EQ(aws.criteria[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(aws.criteria[1].verdict, Verdict::kMet);  // 3200 Gbit/s
  EXPECT_EQ(aws.criteria[2].verdict, Verdict::kMet);  // 1 s
  EXPECT_EQ(aws.criteria[3].verdict, Verdict::kUnknown);
  ProviderEvaluation half = Evaluate("halfco");
  EXPECT_EQ(half.criteria[1].verdict, Verdict::kUnknown);  // no offer states its network
  EXPECT_EQ(half.criteria[2].verdict, Verdict::kMet);      // exactly 60 s is <= 1 minute
  EXPECT_EQ(half.criteria[3].verdict, Verdict::kUnknown);  // 24x7 but response time unknown
  EXPECT_STREQ(VerdictName(Verdict::kNotMet), "not met");
}

}  // namespace
}  // namespace fulcrum::catalog
