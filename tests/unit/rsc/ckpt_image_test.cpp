// The checks a restore makes of a transparent checkpoint's image before trusting it
// (rsc/ckpt_image.h): a whole image passes; each kind of damage is named.
#include "rsc/ckpt_image.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kite::rsc::ckpt {
namespace {

struct Image {
  std::unique_ptr<Header> h = std::make_unique<Header>();
  std::vector<Region> regions;
  std::vector<FdEntry> fds;
  std::vector<MapEntry> maps;
  Image() {
    std::memset(h.get(), 0, sizeof(Header));
    std::memcpy(h->magic, kMagic, 8);
    h->stack_top = 0x7ffffffff000;
    regions = {{0x555555558000, 0x555555559000, 3, kPlain},
               {0x555555559000, 0x55555557a000, 3, kHeap},
               {0x7ffffffde000, 0x7ffffffff000, 3, kStack}};
    h->regions = regions.size();
    fds.resize(1);
    std::memset(&fds[0], 0, sizeof(FdEntry));
    fds[0].fd = 3;
    fds[0].kind = kStandIn;
    fds[0].stand_in_len = 10;
    h->fds = 1;
  }
  uint64_t Bytes() const {
    uint64_t n = sizeof(Header) + regions.size() * sizeof(Region) + fds.size() * sizeof(FdEntry) +
                 maps.size() * sizeof(MapEntry);
    for (const auto& r : regions) n += r.end - r.start;
    return n;
  }
  std::string Check(int64_t extra = 0) const {
    const char* bad = CheckTables(*h, regions.data(), fds.data(), maps.data(),
                                  Bytes() + static_cast<uint64_t>(extra));
    return bad ? bad : "";
  }
};

TEST(CkptImage, AWholeImagePasses) {
  Image i;
  EXPECT_EQ(i.Check(), "");
}

TEST(CkptImage, EachDamageIsNamed) {
  {
    Image i;
    i.h->magic[0] = 'X';
    EXPECT_EQ(i.Check(), "not a Kite checkpoint image");
  }
  {
    Image i;
    EXPECT_NE(i.Check(-1).find("not as long as its tables say"), std::string::npos);
    EXPECT_NE(i.Check(1).find("not as long as its tables say"), std::string::npos);
  }
  {
    Image i;
    i.regions[0].end = i.regions[0].start;
    EXPECT_NE(i.Check().find("a memory region is not one"), std::string::npos);
  }
  {
    Image i;
    i.regions[1].start -= 0x1000;
    EXPECT_NE(i.Check().find("memory regions overlap"), std::string::npos);
  }
  {
    Image i;
    i.regions[2].end = uint64_t{1} << 48;
    EXPECT_NE(i.Check().find("a memory region is not one"), std::string::npos);
  }
  {
    Image i;
    i.regions[0].prot = 4;  // not readable: never saved
    EXPECT_NE(i.Check().find("kind or protection"), std::string::npos);
  }
  {
    Image i;
    i.regions[0].prot = 1;  // a file's pages the loader wrote, then made read-only
    EXPECT_EQ(i.Check(), "");
  }
  {
    Image i;
    i.regions[1].prot = 1;  // a heap that cannot be written
    EXPECT_NE(i.Check().find("kind or protection"), std::string::npos);
  }
  {
    Image i;
    i.h->stack_top += 0x1000;
    EXPECT_NE(i.Check().find("the stack does not end at its top"), std::string::npos);
  }
  {
    Image i;
    i.fds[0].fd = -1;
    EXPECT_NE(i.Check().find("a descriptor's number or kind"), std::string::npos);
  }
  {
    Image i;
    std::memset(i.fds[0].path, 'a', sizeof i.fds[0].path);
    EXPECT_NE(i.Check().find("a path does not end"), std::string::npos);
  }
  {
    Image i;
    i.fds[0].stand_in_len = 0;
    EXPECT_NE(i.Check().find("a remote file's stand-in"), std::string::npos);
  }
  {
    Image i;
    i.h->fds = kMaxFds + 1;
    EXPECT_NE(i.Check().find("too long"), std::string::npos);
  }
}

// A tree of three processes: a shell (100) and two children, their images one after another.
struct Tree {
  TreeHeader t{};
  std::vector<TreeEntry> e;
  uint64_t bytes = 0;
  Tree() {
    std::memcpy(t.magic, kTreeMagic, 8);
    uint64_t at = sizeof(TreeHeader) + 3 * sizeof(TreeEntry);
    for (int64_t pid : {100, 101, 102}) {
      e.push_back({pid, pid == 100 ? 1 : 100, at, sizeof(Header) + 4096});
      at += sizeof(Header) + 4096;
    }
    t.count = e.size();
    bytes = at;
  }
  std::string Check() const {
    const char* bad = CheckTree(t, e.data(), bytes);
    return bad ? bad : "";
  }
};

TEST(CkptTree, AShellAndItsChildrenPass) {
  Tree tree;
  EXPECT_EQ(tree.Check(), "");
}

TEST(CkptTree, EachDamageIsNamed) {
  auto named = [](const std::function<void(Tree&)>& damage, const std::string& what) {
    Tree tree;
    damage(tree);
    EXPECT_NE(tree.Check().find(what), std::string::npos) << what << ": " << tree.Check();
  };
  named([](Tree& t) { t.t.magic[4] = 'X'; }, "not a Kite checkpoint of a process tree");
  named([](Tree& t) { t.t.count = 0; }, "its number of processes");
  named([](Tree& t) { t.t.count = kMaxTree + 1; }, "its number of processes");
  named([](Tree& t) { t.e[2].pid = 101; }, "a process twice");
  named([](Tree& t) { t.e[1].pid = 0; }, "a process id");
  named([](Tree& t) { t.e[1].offset += 8; }, "not where its table says");
  named([](Tree& t) { t.e[2].length = t.bytes; }, "not where its table says");
  named([](Tree& t) { t.bytes += 1; }, "not as long as its table says");
  named([](Tree& t) { t.e[2].ppid = 7; }, "not one process tree");
  named([](Tree& t) { t.e[2].ppid = 101; }, "not the first one's child");
  named([](Tree& t) { t.e[0].ppid = 102; }, "not one process tree");
}

}  // namespace
}  // namespace kite::rsc::ckpt
