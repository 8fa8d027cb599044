// A scratch directory for the lazaret_fs unit tests, removed afterwards.
#ifndef LAZARET_SERVICES_COMMON_FS_TEST_DIR_H_
#define LAZARET_SERVICES_COMMON_FS_TEST_DIR_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

namespace lazaret::fs {

class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-fs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    (void)!system(("chmod -R u+rwx " + base_ + "; rm -rf " + base_).c_str());
  }

  std::string P(const std::string& rel) const { return base_ + "/" + rel; }
  void Write(const std::string& rel, const std::string& contents) {
    std::ofstream(P(rel)) << contents;
  }
  std::string Slurp(const std::string& rel) const {
    std::ifstream in(P(rel));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool Exists(const std::string& rel) const {
    struct stat st {};
    return lstat(P(rel).c_str(), &st) == 0;
  }

  std::string base_;
};

}  // namespace lazaret::fs

#endif  // LAZARET_SERVICES_COMMON_FS_TEST_DIR_H_
