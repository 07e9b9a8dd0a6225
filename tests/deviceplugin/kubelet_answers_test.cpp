#include "deviceplugin/kubelet_answers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace vgpu::deviceplugin {
namespace {

// An answer of this plugin as kubelet 1.20.2 recorded it on the e2e cluster: written for
// d21946cc-…_main (its containers/ mount), here held by pod "victim".
constexpr const char* kAnswer =
    "ChoKFENVREFfREVWSUNFX1NNX0xJTUlUEgIzMAovChZOVklESUFfVklTSUJMRV9ERVZJQ0VTEhVHUFUtZmFrZS1lMm"
    "Utbm9kZS0xLTAKegofQ1VEQV9ERVZJQ0VfTUVNT1JZX1NIQVJFRF9DQUNIRRJXL3Zhci9saWIvdmdwdS1lMmUvbm9k"
    "ZXMvZTJlLW5vZGUtMS9ob29rL3ZncHUvMGY5ZTQ4MTUtZWY5OC00ODYzLTg4YTQtNTM2NzkxMjU1OGQ5LmNhY2hlCi"
    "MKGkNVREFfREVWSUNFX01FTU9SWV9MSU1JVF8wEgUzMDAwbQocChZDVURBX0RFVklDRV9TTV9MSU1JVF8wEgIzMBJ6"
    "CjcvdmFyL2xpYi92Z3B1LWUyZS9ub2Rlcy9lMmUtbm9kZS0xL2hvb2svdmdwdS9saWJ2Z3B1LnNvEj0vdmFyL2xpYi"
    "92Z3B1LWUyZS9ub2Rlcy9lMmUtbm9kZS0xL2hvb2svdmdwdS9saWJ2Z3B1LnNvLjAuMS4wGAESkQEKLC92YXIvbGli"
    "L3ZncHUtZTJlL25vZGVzL2UyZS1ub2RlLTEvaG9vay92Z3B1EmEvdmFyL2xpYi92Z3B1LWUyZS9ub2Rlcy9lMmUtbm"
    "9kZS0xL2hvb2svdmdwdS9jb250YWluZXJzL2QyMTk0NmNjLTE5OTQtNGE1ZC1iZDBmLTlhZTFmZDU2YzU3MV9tYWlu"
    "Eh4KDS90bXAvdmdwdWxvY2sSDS90bXAvdmdwdWxvY2sSUgoSL2V0Yy9sZC5zby5wcmVsb2FkEjovdmFyL2xpYi92Z3"
    "B1LWUyZS9ub2Rlcy9lMmUtbm9kZS0xL2hvb2svdmdwdS9sZC5zby5wcmVsb2FkGAE=";

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/kubelet_answers_test.XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { (void)std::remove(path.c_str()); }
};

TEST(ReadKubeletAnswers, NamesThePodAnAnswerWasWrittenFor) {
  TempFile f(std::string(R"({"Data":{"PodDeviceEntries":[)") +
             R"({"PodUID":"victim","ContainerName":"main","ResourceName":"nvidia.com/gpu",)" +
             R"("DeviceIDs":{"0":["GPU-fake-1-9"]},"AllocResp":")" + kAnswer + R"("},)" +
             R"({"PodUID":"other","ContainerName":"c","ResourceName":"example.com/x",)" +
             R"("DeviceIDs":{"0":["x"]},"AllocResp":"aGk="}]},"Checksum":1})");
  auto got = ReadKubeletAnswers(f.path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].holder_uid, "victim");
  EXPECT_EQ((*got)[0].resource, "nvidia.com/gpu");
  ASSERT_TRUE((*got)[0].written_for.has_value());
  EXPECT_EQ(*(*got)[0].written_for,
            (codec::ContainerDirName{"d21946cc-1994-4a5d-bd0f-9ae1fd56c571", "main"}));
  EXPECT_FALSE((*got)[1].written_for.has_value());  // not our answer

  auto owed = allocate::MisdeliveredAnswers(*got, "nvidia.com/gpu");
  ASSERT_EQ(owed.size(), 1u);
  EXPECT_EQ(owed[0].pod_uid, "d21946cc-1994-4a5d-bd0f-9ae1fd56c571");
}

TEST(ReadKubeletAnswers, NoFileIsNoAnswers) {
  auto got = ReadKubeletAnswers("/nonexistent/kubelet_internal_checkpoint");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
}

TEST(ReadKubeletAnswers, AFileKubeletDidNotWriteIsAnError) {
  TempFile f("not json");
  auto got = ReadKubeletAnswers(f.path);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().ToString().find(f.path), std::string::npos) << got.status().ToString();
}

}  // namespace
}  // namespace vgpu::deviceplugin
