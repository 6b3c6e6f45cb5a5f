"""Writes the tensor types of a llama.cpp-quantized GGUF as a golden for the mix rules."""
import sys, gguf
path, out = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(path)
arch = bytes(r.fields['general.architecture'].parts[-1]).decode()
n_layer = int(r.fields[arch + '.block_count'].parts[-1][0])
names = [t.name for t in r.tensors]
with open(out, 'w') as f:
    f.write(f'# Tensor types llama.cpp chose for {path.split("/")[-1]} (Q4_K_M), read with the gguf\n')
    f.write('# Python package by tests/data/convert/mix_golden.py MODEL.gguf OUT.txt;\n')
    f.write('# tests/test_quantize_tool.cpp checks ember\'s TypePlan against them.\n')
    f.write(f'n_layer {n_layer} has_output {int("output.weight" in names)}\n')
    for t in r.tensors:
        f.write(f'{t.name} {t.tensor_type.name} ' + ' '.join(str(int(d)) for d in t.shape) + '\n')
