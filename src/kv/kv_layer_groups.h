// Which layers share a KV block. Layers with the same attention window form a kind (global layers
// are one kind); each kind is split into groups of g layers, g the greatest common divisor of the
// kinds' layer counts, so that every group has g layers and one block size serves them all. A pool
// block holds the keys and values of one group's g layers for block_size positions, and each
// sequence has one block table per group: a window group's table can drop the blocks its window has
// slid past while a global group keeps them all.
//
// Gemma 3 (18 layers, every sixth global): g = 3, one global group {5, 11, 17} and five window groups
// of three. Llama or Qwen (all global): one group of every layer, the layout of a plain paged cache.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"

namespace tempered {

struct KvLayerGroups {
    int64_t layers_per_group = 0;         // g
    std::vector<int64_t> group_of_layer;  // layer -> its group
    std::vector<int64_t> slot_of_layer;   // layer -> its index inside its group, in [0, g)
    std::vector<int64_t> group_window;    // group -> its layers' window (0: global)

    int64_t group_count() const { return static_cast<int64_t>(group_window.size()); }
    bool is_window_group(int64_t group) const { return group_window[static_cast<size_t>(group)] > 0; }
};

// The grouping of `shape`'s layers (shape.layer_windows: empty or one entry per layer, each >= 0).
KvLayerGroups kv_layer_groups(const KvCacheShape& shape);

// The first block a query at `position` can read in a layer of window `window` (0: global, block 0):
// it attends to positions position - window + 1 .. position.
int64_t first_block_in_window(int64_t position, int64_t window, int64_t block_size);

}  // namespace tempered
