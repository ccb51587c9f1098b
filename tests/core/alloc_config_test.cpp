// TESSERA_ALLOC_CONF parsing (issue 15, point 3): every key, the list form of
// roundup_power2_divisions, and refusals that name the key and the value.
#include <gtest/gtest.h>

#include <tessera/error.h>

#include "memory/alloc_config.h"

namespace {

using namespace tessera::memory;
constexpr size_t MiB = size_t{1} << 20;

TEST(AllocConf, DefaultsAreTorchs) {
  for (const char* text : {"", "   "}) {
    const AllocatorConfig c = parse_alloc_conf(text);
    EXPECT_EQ(c.max_split_size, std::numeric_limits<size_t>::max());
    for (uint32_t d : c.roundup_power2_divisions) EXPECT_EQ(d, 0u);
    EXPECT_EQ(c.garbage_collection_threshold, 0.0);
    EXPECT_EQ(c.per_process_memory_fraction, 0.0);
    EXPECT_FALSE(c.expandable_segments);
    EXPECT_EQ(c.backend, AllocatorBackend::Caching);
    EXPECT_EQ(c.to_string(), "");
  }
}

TEST(AllocConf, ParsesEveryKey) {
  const AllocatorConfig c = parse_alloc_conf(
      "max_split_size_mb:64, roundup_power2_divisions:[2:1,8:4,>:8],garbage_collection_threshold:0.6,"
      "per_process_memory_fraction:0.5,expandable_segments:True,backend:plugin");
  EXPECT_EQ(c.max_split_size, 64 * MiB);
  EXPECT_EQ(c.roundup_power2_divisions[0], 1u);   // below 2 MiB
  EXPECT_EQ(c.roundup_power2_divisions[1], 4u);   // [2, 4) MiB
  EXPECT_EQ(c.roundup_power2_divisions[2], 4u);   // [4, 8) MiB
  EXPECT_EQ(c.roundup_power2_divisions[3], 8u);   // [8, 16) MiB
  EXPECT_EQ(c.roundup_power2_divisions[15], 8u);  // from 32 GiB
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.6);
  EXPECT_DOUBLE_EQ(c.per_process_memory_fraction, 0.5);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_EQ(c.backend, AllocatorBackend::Plugin);
  // The text form parses back to the same settings.
  AllocatorConfig back = parse_alloc_conf(c.to_string());
  back.text = c.text;
  EXPECT_EQ(back, c) << c.to_string();
}

TEST(AllocConf, SingleDivisionsApplyToEverySize) {
  const AllocatorConfig c = parse_alloc_conf("roundup_power2_divisions:4");
  for (uint32_t d : c.roundup_power2_divisions) EXPECT_EQ(d, 4u);
  EXPECT_EQ(parse_alloc_conf("roundup_power2_divisions:4").to_string(), "roundup_power2_divisions:4");
}

TEST(AllocConf, ListWithoutRestLeavesLargerSizesUnrounded) {
  const AllocatorConfig c = parse_alloc_conf("roundup_power2_divisions:[256:2]");
  EXPECT_EQ(c.divisions_for(100 * MiB), 2u);
  EXPECT_EQ(c.divisions_for(255 * MiB), 2u);
  EXPECT_EQ(c.divisions_for(256 * MiB), 0u);
  EXPECT_EQ(AllocatorConfig::roundup_band(MiB), 0u);
  EXPECT_EQ(AllocatorConfig::roundup_band(2 * MiB), 1u);
  EXPECT_EQ(AllocatorConfig::roundup_band(size_t{1} << 50), 15u);
}

TEST(AllocConf, AcceptsLowercaseBooleansAndTrailingComma) {
  EXPECT_TRUE(parse_alloc_conf("expandable_segments:true,").expandable_segments);
  EXPECT_FALSE(parse_alloc_conf("expandable_segments:False").expandable_segments);
}

struct Bad {
  const char* text;
  const char* key;    // the message names it
  const char* value;  // and this (when not empty)
};

class AllocConfRefuses : public ::testing::TestWithParam<Bad> {};

TEST_P(AllocConfRefuses, NamingTheKeyAndValue) {
  const Bad& bad = GetParam();
  try {
    parse_alloc_conf(bad.text);
    FAIL() << "accepted '" << bad.text << "'";
  } catch (const tessera::ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("TESSERA_ALLOC_CONF"), std::string::npos) << m;
    EXPECT_NE(m.find(bad.key), std::string::npos) << m;
    EXPECT_NE(m.find(bad.value), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Values, AllocConfRefuses,
    ::testing::Values(
        Bad{"foo:1", "unknown key 'foo'", "max_split_size_mb"},  // and lists the keys
        Bad{"max_split_size_mb:19", "max_split_size_mb", "19"},
        Bad{"max_split_size_mb:abc", "max_split_size_mb", "abc"},
        Bad{"max_split_size_mb:-40", "max_split_size_mb", "-40"},
        Bad{"max_split_size_mb", "max_split_size_mb", "key:value"},
        Bad{"max_split_size_mb:", "max_split_size_mb", "a value"},
        Bad{"roundup_power2_divisions:3", "roundup_power2_divisions", "3"},
        Bad{"roundup_power2_divisions:[3:1]", "roundup_power2_divisions", "[3:1"},
        Bad{"roundup_power2_divisions:[8:1,2:4]", "roundup_power2_divisions", "2:4"},
        Bad{"roundup_power2_divisions:[2:3]", "roundup_power2_divisions", "2:3"},
        Bad{"roundup_power2_divisions:[2:1", "roundup_power2_divisions", "closed by ']'"},
        Bad{"roundup_power2_divisions:[>:2,4:1]", "roundup_power2_divisions", ">:2"},
        Bad{"garbage_collection_threshold:1", "garbage_collection_threshold", "0 < x < 1"},
        Bad{"garbage_collection_threshold:0", "garbage_collection_threshold", ":0 "},
        Bad{"garbage_collection_threshold:x", "garbage_collection_threshold", "x"},
        Bad{"per_process_memory_fraction:0", "per_process_memory_fraction", "0 < x <= 1"},
        Bad{"per_process_memory_fraction:1.5", "per_process_memory_fraction", "1.5"},
        Bad{"per_process_memory_fraction:nan", "per_process_memory_fraction", "nan"},
        Bad{"expandable_segments:yes", "expandable_segments", "True or False"},
        Bad{"backend:native", "backend", "native"},
        Bad{"backend:caching,backend:plugin", "backend", "twice"},
        Bad{"expandable_segments:True:False", "expandable_segments", "expected ','"},
        Bad{":True", "malformed", ":True"}));

TEST(AllocConf, SetAllocConfWinsUntilReplaced) {
  set_alloc_conf("max_split_size_mb:32");
  EXPECT_EQ(current_alloc_conf().max_split_size, 32 * MiB);
  EXPECT_THROW(set_alloc_conf("max_split_size_mb:2"), tessera::ValueError);
  EXPECT_EQ(current_alloc_conf().max_split_size, 32 * MiB) << "a refused setting changes nothing";
  set_alloc_conf("");
  EXPECT_EQ(current_alloc_conf().max_split_size, std::numeric_limits<size_t>::max());
}

}  // namespace
