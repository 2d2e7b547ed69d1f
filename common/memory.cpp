#include "common/memory.h"

#include <malloc.h>

namespace kite {

void KeepLargeBuffersOnTheHeap() {
  ::mallopt(M_MMAP_THRESHOLD, 8 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace kite
