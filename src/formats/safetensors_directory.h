// The weights of a Hugging Face model directory: `model.safetensors`, or the shards that
// `model.safetensors.index.json`'s weight_map names, each memory-mapped and checked (safetensors.h).
// Every tensor the index names must be in the shard it names, no tensor may be in two shards, and a
// shard name must be a plain file name inside the directory (an index cannot point elsewhere).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "formats/safetensors.h"

namespace tempered {

class SafetensorsDirectory {
public:
    static Result<SafetensorsDirectory> open(const std::string& directory);

    const SafetensorsTensor* tensor(std::string_view name) const;
    // Every tensor of every shard, shard by shard in the index's order.
    std::vector<const SafetensorsTensor*> tensors() const;
    const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }
    const std::string& directory() const { return directory_; }

private:
    std::string directory_;
    std::vector<std::unique_ptr<SafetensorsFile>> shards_;  // pointers stay put as the vector grows
    std::unordered_map<std::string, const SafetensorsTensor*> by_name_;
};

}  // namespace tempered
