#include "core/monitor/proc_parse.h"

#include <gtest/gtest.h>

namespace vgpu::monitor {
namespace {

TEST(ParseNsPids, ReadsTheNamespaceChain) {
  struct Case {
    const char* name;
    const char* status;
    std::optional<std::vector<int32_t>> want;
  };
  const Case cases[] = {
      {"host process",
       "Name:\tbash\nTgid:\t4242\nPid:\t4242\nPPid:\t1\nNSpid:\t4242\nNSpgid:\t4242\n",
       std::vector<int32_t>{4242}},
      {"in a container", "Name:\tpython\nPid:\t4242\nPPid:\t4200\nNSpid:\t4242\t7\nNSsid:\t1\n",
       std::vector<int32_t>{4242, 7}},
      {"nested", "NSpid:\t4242\t70\t7\n", std::vector<int32_t>{4242, 70, 7}},
      {"kernel without NSpid: the Pid line", "Name:\tx\nPid:\t99\nPPid:\t1\n",
       std::vector<int32_t>{99}},
      {"NSpid wins over Pid", "Pid:\t4242\nNSpid:\t4242 7\n", std::vector<int32_t>{4242, 7}},
      {"no NSpid, PPid is not Pid", "Name:\tx\nPPid:\t1\n", std::nullopt},
      {"garbage in NSpid", "NSpid:\t4242\tx\n", std::nullopt},
      {"empty NSpid", "NSpid:\n", std::nullopt},
      {"empty", "", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(ParseNsPids(c.status), c.want) << c.name;
}

TEST(ParseStatStartTime, CountsFieldsFromTheLastParenthesis) {
  // Fields: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice threads itrealvalue starttime ...
  const std::string rest = " S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 9 10\n";
  struct Case {
    const char* name;
    std::string stat;
    std::optional<uint64_t> want;
  };
  const Case cases[] = {
      {"plain", "4242 (python3)" + rest, 123456},
      {"spaces in comm", "4242 (my tool)" + rest, 123456},
      {"parentheses in comm", "4242 (a) b (c))" + rest, 123456},
      {"comm looks like fields", "4242 (1 2 3 4 5 6 7 8 9 10)" + rest, 123456},
      {"no parenthesis", "4242 python3 S 1", std::nullopt},
      {"too short", "4242 (x) S 1 2 3", std::nullopt},
      {"not a number", "4242 (x) S 1 4242 4242 0 -1 1 1 0 0 0 5 3 0 0 20 0 1 0 abc", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(ParseStatStartTime(c.stat), c.want) << c.name;
}

TEST(ParseStatState, TheFieldAfterTheLastParenthesis) {
  struct Case {
    const char* name;
    std::string stat;
    std::optional<char> want;
  };
  const Case cases[] = {
      {"running", "4242 (python3) R 1 4242", 'R'},
      {"zombie", "4242 (python3) Z 1 4242", 'Z'},
      {"parentheses in comm", "4242 (a) S (b)) D 1", 'D'},
      {"no parenthesis", "4242 python3 S 1", std::nullopt},
      {"nothing after it", "4242 (x)", std::nullopt},
      {"not one character", "4242 (x) SS 1", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(ParseStatState(c.stat), c.want) << c.name;
}

TEST(ParseMappedFiles, DistinctFilesWithDeviceAndInode) {
  const std::string maps =
      "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1312    /usr/bin/python3.11\n"
      "55d0c0a02000-55d0c0a04000 r-xp 00002000 fd:01 1312    /usr/bin/python3.11\n"
      "7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 \n"
      "7f1c2b000000-7f1c2b112000 rw-s 00000000 103:02 9437185 /usr/local/vgpu/a b.cache\n"
      "7f1c2c000000-7f1c2c001000 rw-s 00000000 00:2a 77   /tmp/x.cache (deleted)\n"
      "7ffd5a1d0000-7ffd5a1f1000 rw-p 00000000 00:00 0                          [stack]\n"
      "garbage line\n"
      "7f00-7f01 r--p 00000000 zz:01 5 /bad/device\n"
      "7f00-7f01 r--p 00000000 fd:01 -5 /bad/inode";  // no final newline
  const std::vector<FileId> want{{0xfd, 1, 1312}, {0x103, 2, 9437185}, {0, 0x2a, 77}};
  EXPECT_EQ(ParseMappedFiles(maps), want);
  EXPECT_TRUE(ParseMappedFiles("").empty());
}

}  // namespace
}  // namespace vgpu::monitor
