#include "services/common/fs/sha256.h"

#include <gtest/gtest.h>

namespace lazaret::fs {
namespace {

TEST(Sha256Test, KnownDigests) {
  Sha256 empty;
  EXPECT_EQ(empty.HexDigest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 abc;
  abc.Update("a");
  abc.Update("bc");
  EXPECT_EQ(abc.HexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, FieldBoundariesCannotBeShifted) {
  Sha256 a;
  a.UpdateField("ab");
  a.UpdateField("c");
  Sha256 b;
  b.UpdateField("a");
  b.UpdateField("bc");
  EXPECT_NE(a.HexDigest(), b.HexDigest());
}

}  // namespace
}  // namespace lazaret::fs
