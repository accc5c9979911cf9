#include "core/yaml.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

YamlNode Load(const std::string& text) {
  auto root = LoadYaml(text, "f.yaml");
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return root.ok() ? *root : YamlNode(YAML::Node(), std::make_shared<const std::string>(""), "");
}

TEST(YamlTest, FieldPathsAndLines) {
  YamlNode root = Load("a:\n  b: 1\n  list:\n    - {c: x}\n    - {c: y}\n");
  auto b = root.Find("a")->Find("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->field(), "a.b");
  EXPECT_EQ(b->line(), 2);
  auto items = root.Find("a")->Find("list")->Items();
  ASSERT_TRUE(items.ok());
  ASSERT_EQ(items->size(), 2u);
  auto c = (*items)[1].Find("c");
  EXPECT_EQ(c->field(), "a.list[1].c");
  EXPECT_EQ(c->line(), 5);
  EXPECT_FALSE(root.Find("missing").has_value());
}

TEST(YamlTest, TypedValues) {
  YamlNode root =
      Load("n: 2.5\ni: 8\nb: yes\nd: 1h30m\nc: 20B\ns: 80GiB\nl: [a, b]\nm: {k: v}\ncsv: 'x, y'\n");
  EXPECT_EQ(*root.Find("n")->Number(), 2.5);
  EXPECT_EQ(*root.Find("i")->Integer(0, 10), 8);
  EXPECT_TRUE(*root.Find("b")->Bool());
  EXPECT_EQ(*root.Find("d")->Duration(), 5400);
  EXPECT_EQ(*root.Find("c")->Count(), 2e10);
  EXPECT_EQ(*root.Find("s")->Bytes(), 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(*root.Find("l")->StringList(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(root.Find("m")->StringMap()->at("k"), "v");
  EXPECT_EQ(*root.Find("csv")->StringList(true), (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(root.Find("csv")->StringList(false).ok());
}

TEST(YamlTest, ErrorsInTheReadmeFormatWithDetail) {
  YamlNode root = Load("top:\n  n: many\n");
  Status status = root.Find("top")->Find("n")->Number("a number of GPUs", 1, 100).status();
  EXPECT_EQ(status.message(), "f.yaml:2: top.n: expected a number of GPUs, found \"many\"");
  ASSERT_NE(status.detail(), nullptr);
  EXPECT_EQ(status.detail()->file, "f.yaml");
  EXPECT_EQ(status.detail()->line, 2);
  EXPECT_EQ(status.detail()->field, "top.n");
  EXPECT_EQ(status.detail()->found, "many");
  EXPECT_EQ(root.Find("top")->Text().status().message(),
            "f.yaml:2: top: expected a single value, found a mapping");
  EXPECT_EQ(root.Find("top")->MissingError("x").message(),
            "f.yaml:2: top.x: expected a value, found no such field");
}

TEST(YamlTest, RangeAndIntegerChecks) {
  YamlNode root = Load("n: 0\nf: 2.5\n");
  EXPECT_FALSE(root.Find("n")->Number("> 0", YamlNode::kAboveZero).ok());
  EXPECT_EQ(root.Find("f")->Integer(0, 10).status().message(),
            "f.yaml:2: f: expected a whole number from 0 to 10, found \"2.5\"");
}

TEST(YamlTest, UnknownKeysNameTheNearest) {
  YamlNode root = Load("tokens: 1\nseq_lne: 2\n");
  Status status = root.CheckKeys({"tokens", "seq_len", "samples"});
  EXPECT_EQ(status.message(),
            "f.yaml:2: seq_lne: expected a known field (tokens, seq_len, samples), found unknown "
            "field \"seq_lne\"; did you mean seq_len?");
  ASSERT_NE(status.detail(), nullptr);
  EXPECT_EQ(status.detail()->nearest, std::vector<std::string>{"seq_len"});
  EXPECT_TRUE(root.CheckKeys({"tokens", "seq_lne"}).ok());
  EXPECT_EQ(Load("- 1\n").CheckKeys({"a"}, "a mapping of settings").message(),
            "f.yaml:1: expected a mapping of settings, found a list");
}

TEST(YamlTest, DuplicateKeysRefusedAtEveryDepth) {
  for (const char* text : {"a: 1\na: 2\n", "x:\n  a: 1\n  a: 2\n", "l:\n  - {a: 1, a: 2}\n"}) {
    auto root = LoadYaml(text, "f.yaml");
    ASSERT_FALSE(root.ok()) << text;
    EXPECT_NE(root.status().message().find("expected each key once in a mapping"),
              std::string::npos)
        << root.status().message();
    ASSERT_NE(root.status().detail(), nullptr);
  }
  auto root = LoadYaml("x:\n  a: 1\n  b: 2\n  a: 3\n", "f.yaml");
  EXPECT_EQ(root.status().message(),
            "f.yaml:4: x.a: expected each key once in a mapping, found \"a\" again (first on "
            "line 2)");
  EXPECT_TRUE(LoadYaml("a: {k: 1}\nb: {k: 1}\n", "f.yaml").ok());  // same key, two mappings
}

TEST(YamlTest, NonFiniteNumbersRefusedByEveryNumberAccessor) {
  for (const char* bad : {".inf", "-.inf", ".nan", ".NaN", "nan", "inf", "infinity", "1e400"}) {
    YamlNode root = Load(std::string("v: ") + bad + "\n");
    YamlNode v = *root.Find("v");
    EXPECT_FALSE(v.Number().ok()) << bad;
    EXPECT_FALSE(v.Integer(-10, 10).ok()) << bad;
    EXPECT_FALSE(v.Duration().ok()) << bad;
    EXPECT_FALSE(v.Count().ok()) << bad;
    EXPECT_FALSE(v.Bytes().ok()) << bad;
  }
  // Finite inputs whose product overflows are refused too.
  EXPECT_FALSE(Load("v: 1e300T\n").Find("v")->Count().ok());
  EXPECT_FALSE(Load("v: 1e308w\n").Find("v")->Duration().ok());
}

TEST(YamlTest, AliasesAreCheckedOnceAndNeverLoop) {
  EXPECT_TRUE(LoadYaml("a: &x {k: 1}\nb: *x\nc: *x\n", "f.yaml").ok());
  // Nested aliases expand to 10^9 leaves if walked naively; each node is visited once.
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string n = std::to_string(i);
    const std::string prev = std::to_string(i - 1);
    laughs.append("l").append(n).append(": &l").append(n).append(" [*l").append(prev);
    for (int j = 1; j < 10; ++j) laughs.append(", *l").append(prev);
    laughs.append("]\n");
  }
  EXPECT_TRUE(LoadYaml(laughs, "f.yaml").ok());
  auto dup = LoadYaml("a: &x {k: 1, k: 2}\nb: *x\n", "f.yaml");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("f.yaml:1: a.k: expected each key once"), std::string::npos)
      << dup.status().message();
}

TEST(YamlTest, SyntaxErrorNamesTheLine) {
  auto root = LoadYaml("a: 1\nb: [unclosed\n", "f.yaml");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(root.status().message().find("f.yaml:"), std::string::npos);
  EXPECT_NE(root.status().message().find("expected valid YAML, found"), std::string::npos);
}

// Issue 29: a multi-document YAML dropped every document after the first, silently.
TEST(YamlTest, ASecondDocumentIsRefusedAtItsLine) {
  for (const auto& [text, where] :
       std::vector<std::pair<std::string, std::string>>{{"a: 1\n---\nb: 2\n", "f.yaml:3:"},
                                                        {"---\na: 1\n---\nb: 2\n", "f.yaml:4:"},
                                                        {"# head\na: 1\n---\n", "f.yaml:3:"},
                                                        {"---\na: 1\n\n---\n", "f.yaml:4:"}}) {
    SCOPED_TRACE(text);
    auto root = LoadYaml(text, "f.yaml");
    ASSERT_FALSE(root.ok());
    EXPECT_EQ(root.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(
        root.status().message().rfind(where + " expected one YAML document, found a second", 0), 0u)
        << root.status().message();
  }
  // One document, with or without its start marker, still loads.
  EXPECT_TRUE(LoadYaml("---\na: 1\n", "f.yaml").ok());
  EXPECT_TRUE(LoadYaml("a: 1\n", "f.yaml").ok());
  EXPECT_TRUE(LoadYaml("", "f.yaml").ok());
}

}  // namespace
}  // namespace fulcrum
