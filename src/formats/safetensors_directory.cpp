#include "formats/safetensors_directory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tempered {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";
constexpr uintmax_t kMaxIndexBytes = 64u << 20;  // real indexes are a few hundred kilobytes

// A shard name from the index: a plain file name, no directory part, so the index cannot reach outside.
bool is_plain_file_name(const std::string& name) {
    return !name.empty() && name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
           name != "." && name != "..";
}

// The index's weight_map: tensor name -> shard file name; the shard names in first-seen order.
struct WeightMap {
    std::vector<std::pair<std::string, std::string>> entries;
    std::vector<std::string> shard_order;
};

Result<WeightMap> read_index(const fs::path& path) {
    std::error_code error;
    const uintmax_t bytes = fs::file_size(path, error);
    if (error || bytes > kMaxIndexBytes) return Error{path.string() + ": cannot be read, or is over 64 MiB"};
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const json root = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object()) return Error{path.string() + ": not a JSON object"};
    const auto map = root.find("weight_map");
    if (map == root.end() || !map->is_object()) return Error{path.string() + ": no \"weight_map\" object"};
    WeightMap out;
    for (const auto& [tensor, shard] : map->items()) {
        if (!shard.is_string() || !is_plain_file_name(shard.get<std::string>()))
            return Error{path.string() + ": tensor '" + tensor + "' maps to something that is not a file name here"};
        const std::string& name = shard.get_ref<const std::string&>();
        if (std::find(out.shard_order.begin(), out.shard_order.end(), name) == out.shard_order.end())
            out.shard_order.push_back(name);
        out.entries.emplace_back(tensor, name);
    }
    return out;
}

}  // namespace

Result<SafetensorsDirectory> SafetensorsDirectory::open(const std::string& directory) {
    const fs::path root(directory);
    SafetensorsDirectory out;
    out.directory_ = directory;
    std::vector<std::string> shard_names;
    WeightMap map;
    if (fs::exists(root / kIndexFile)) {
        auto read = read_index(root / kIndexFile);
        if (!read) return read.error();
        map = std::move(read).value();
        shard_names = map.shard_order;
    } else if (fs::exists(root / kSingleFile)) {
        shard_names = {kSingleFile};
    } else {
        return Error{directory + ": no " + kSingleFile + " or " + kIndexFile};
    }
    std::unordered_map<std::string, const SafetensorsFile*> shard_by_name;
    for (const std::string& name : shard_names) {
        auto shard = SafetensorsFile::open((root / name).string());
        if (!shard) return shard.error();
        out.shards_.push_back(std::make_unique<SafetensorsFile>(std::move(shard).value()));
        shard_by_name.emplace(name, out.shards_.back().get());
        for (const SafetensorsTensor& tensor : out.shards_.back()->tensors())
            if (!out.by_name_.emplace(tensor.name, &tensor).second)
                return Error{directory + ": tensor '" + tensor.name + "' is in two shards (the second: " + name + ")"};
    }
    for (const auto& [tensor, shard] : map.entries)
        if (shard_by_name.at(shard)->tensor(tensor) == nullptr)
            return Error{directory + ": " + kIndexFile + " puts tensor '" + tensor + "' in " + shard +
                         ", which does not hold it"};
    return out;
}

const SafetensorsTensor* SafetensorsDirectory::tensor(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const SafetensorsTensor*> SafetensorsDirectory::tensors() const {
    std::vector<const SafetensorsTensor*> out;
    for (const auto& shard : shards_)
        for (const SafetensorsTensor& tensor : shard->tensors()) out.push_back(&tensor);
    return out;
}

}  // namespace tempered
