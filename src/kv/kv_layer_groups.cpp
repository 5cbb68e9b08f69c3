#include "kv/kv_layer_groups.h"

#include <algorithm>
#include <numeric>

namespace tempered {

KvLayerGroups kv_layer_groups(const KvCacheShape& shape) {
    const auto layers = static_cast<size_t>(std::max<int64_t>(shape.layer_count, 0));
    // A list of windows of the wrong length is refused by KvBlockPool::create; until then, global.
    auto window_of = [&](size_t layer) { return layer < shape.layer_windows.size() ? shape.layer_windows[layer] : 0; };
    // The kinds in order of their first layer, each with its layers in order.
    std::vector<int64_t> kind_windows;
    std::vector<std::vector<int64_t>> kind_layers;
    for (size_t layer = 0; layer < layers; ++layer) {
        const auto found = std::find(kind_windows.begin(), kind_windows.end(), window_of(layer));
        const auto kind = static_cast<size_t>(found - kind_windows.begin());
        if (found == kind_windows.end()) {
            kind_windows.push_back(window_of(layer));
            kind_layers.emplace_back();
        }
        kind_layers[kind].push_back(static_cast<int64_t>(layer));
    }
    KvLayerGroups groups;
    for (const auto& members : kind_layers)
        groups.layers_per_group = std::gcd(groups.layers_per_group, static_cast<int64_t>(members.size()));
    groups.group_of_layer.resize(layers);
    groups.slot_of_layer.resize(layers);
    for (size_t kind = 0; kind < kind_layers.size(); ++kind) {
        const auto& members = kind_layers[kind];
        for (size_t i = 0; i < members.size(); ++i) {
            const auto slot = static_cast<int64_t>(i) % groups.layers_per_group;
            if (slot == 0) groups.group_window.push_back(kind_windows[kind]);
            groups.group_of_layer[static_cast<size_t>(members[i])] = groups.group_count() - 1;
            groups.slot_of_layer[static_cast<size_t>(members[i])] = slot;
        }
    }
    return groups;
}

int64_t first_block_in_window(int64_t position, int64_t window, int64_t block_size) {
    if (window <= 0) return 0;
    return std::max<int64_t>(position - window + 1, 0) / block_size;
}

}  // namespace tempered
