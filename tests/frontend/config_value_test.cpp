// Dotted keys of a config tree (frontend/config_value.h): what --set and torchtitan's version
// renames write and read.
#include "projector/frontend/config_value.h"

#include <gtest/gtest.h>

namespace projector {
namespace {

// a.b.c on an empty map builds a -> b -> c; setting it again replaces the value in place; a
// scalar in the way (x = 1, then x.y) becomes a map.
TEST(ConfigValue, DottedKeysBuildAndFindNestedMaps) {
  ConfigValue root = ConfigValue::make_map();
  set_dotted(root, "a.b.c", ConfigValue::make_int(3));
  ASSERT_NE(root.find("a"), nullptr);
  ASSERT_TRUE(root.find("a")->is_map());
  ConfigValue* parent = nullptr;
  const ConfigValue* c = find_dotted(root, "a.b.c", &parent);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->i, 3);
  EXPECT_EQ(parent, root.find("a")->find("b"));
  set_dotted(root, "a.b.c", ConfigValue::make_int(4));
  EXPECT_EQ(find_dotted(root, "a.b.c")->i, 4);
  EXPECT_EQ(root.find("a")->find("b")->entries.size(), 1u);
  EXPECT_EQ(find_dotted(root, "a.b.d"), nullptr);
  EXPECT_EQ(find_dotted(root, "a.b.c.d"), nullptr);  // c is a scalar
  set_dotted(root, "x", ConfigValue::make_int(1));
  set_dotted(root, "x.y", ConfigValue::make_bool(true));
  ASSERT_TRUE(root.find("x")->is_map());
  EXPECT_TRUE(find_dotted(root, "x.y")->b);
}

}  // namespace
}  // namespace projector
