// Files hearth finds or is given are read only when regular, and never block: a FIFO (or a
// device) in their place is refused at once (util/regular_file.h, util/mapped_file.h).
#include "util/regular_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "util/error.h"
#include "util/mapped_file.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

class RegularFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hearth-regular-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RegularFile, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  errno = 0;
  EXPECT_EQ(open_regular_file(fifo), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_FALSE(read_regular_file(fifo, 100));
  try {
    MappedFile m(fifo);
    ADD_FAILURE() << "a FIFO was mapped";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST_F(RegularFile, ReadsRegularFilesAndRefusesFolders) {
  std::ofstream(dir_ / "f") << "hello";
  const auto all = read_regular_file((dir_ / "f").string(), 100);
  ASSERT_TRUE(all);
  EXPECT_EQ(std::string(all->begin(), all->end()), "hello");
  const auto two = read_regular_file((dir_ / "f").string(), 2);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->size(), 2u);
  EXPECT_FALSE(read_regular_file(dir_.string(), 100));
  EXPECT_FALSE(read_regular_file((dir_ / "missing").string(), 100));
  const int fd = open_regular_file((dir_ / "f").string());
  ASSERT_GE(fd, 0);
  char c = 0;
  EXPECT_EQ(::read(fd, &c, 1), 1);  // blocking mode restored for regular reads
  ::close(fd);
}

}  // namespace
}  // namespace hearth
