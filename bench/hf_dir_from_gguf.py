#!/usr/bin/env python3
"""An HF model directory (config.json, model.safetensors, tokenizer files, chat_template.jinja) from a GGUF, with the
weights dequantized, through transformers' own GGUF reader: what an HF-directory engine (vLLM) can serve for the
same model the front reads as a GGUF. For the recorded vLLM runs; needs transformers, gguf and accelerate.

Usage: bench/hf_dir_from_gguf.py GGUF_DIR GGUF_FILE OUT_DIR
"""
import sys

from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig


def main():
    gguf_dir, gguf_file, out = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_file,
                                                 quantization_config=GgufConfig(dequantize=True))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    print("wrote", out, model.config.architectures)


if __name__ == "__main__":
    main()
