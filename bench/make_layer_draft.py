#!/usr/bin/env python3
"""A draft model for `--speculative draft` made from its target: the GGUF's first N transformer blocks, its
embedding, final norm and output head, every tensor copied as stored (no requantization) and every metadata key
kept but `{arch}.block_count` (self-speculation by early exit, as LayerSkip and Draft & Verify do). Its
vocabulary is the target's by construction; whether its drafts are right often enough is what
bench/speculative_decode.py --draft-model measures.

Usage: bench/make_layer_draft.py --model TARGET.gguf --layers N --out DRAFT.gguf
"""
import argparse
import re
import sys

import gguf

BLOCK = re.compile(r"^blk\.(\d+)\.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    reader = gguf.GGUFReader(args.model)
    arch = reader.fields["general.architecture"].contents()
    blocks = reader.fields[f"{arch}.block_count"].contents()
    if not 0 < args.layers < blocks:
        sys.exit(f"--layers must be between 1 and {blocks - 1} (the target has {blocks})")
    writer = gguf.GGUFWriter(args.out, arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue  # the writer writes the header and the architecture itself
        if key == f"{arch}.block_count":
            writer.add_uint32(key, args.layers)
        elif field.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, list(field.contents()), field.types[0], sub_type=field.types[1])
        else:
            writer.add_key_value(key, field.contents(), field.types[0])
    kept = 0
    for tensor in reader.tensors:
        block = BLOCK.match(tensor.name)
        if block and int(block.group(1)) >= args.layers:
            continue
        # The reader's data has the stored shape (rows of bytes for quantized types), which the writer reads back.
        writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
        kept += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{args.out}: {args.layers} of {blocks} blocks, {kept} of {len(reader.tensors)} tensors")


if __name__ == "__main__":
    main()
