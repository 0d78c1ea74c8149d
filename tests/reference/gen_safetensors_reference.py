#!/usr/bin/env python3
# Writes the safetensors reference files of tests/test_safetensors.c: the same tensors saved with
# their float tensors as F32, F64, F16 and BF16, laid out byte for byte as the reference
# writer does (tensors by dtype, widest first, then by name; "__metadata__" first with sorted
# keys; compact JSON padded with spaces to a multiple of 8), built by hand with struct + json.
# PyTorch gives the F16/BF16 bits (its round-to-nearest-even .half() and .bfloat16()) and
# the values they widen back to; those go into safetensors_reference.h.
#
#     /usr/bin/python3 tests/reference/gen_safetensors_reference.py
import json
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# Edge cases of the conversions, then a few ordinary numbers.
VALUES = [
    0.0, -0.0, 1.0, -1.0, 1.0 / 3.0, 0.1, -2.5, 65504.0, 65519.0, 65520.0, 1e5, -1e5,
    2.0 ** -14, 2.0 ** -14 * (1 - 2 ** -11), 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25,
    2.5 * 2.0 ** -24, 1e-8, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8,
    1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20, 3.4028234663852886e38, -3.0e38,
    1.401298464324817e-45, 1.1754943508222875e-38, 1e-40, math.inf, -math.inf, math.nan,
    -math.nan, 123.456, -0.007, 42.0, 1e10, 5e-5,
]

# rank = the reference writer's dtype order; it writes higher ranks first.
RANK = {"BOOL": 0, "F16": 1, "BF16": 2, "I32": 3, "F32": 4, "F64": 5, "I64": 6}
META = {"format": "pt", "note": "quote \" backslash \\ tab\t é"}


def float_bytes(values, fmt):
    t = torch.tensor(values, dtype=torch.float64)
    if fmt == "F64":
        return struct.pack("<%dq" % t.numel(), *t.view(torch.int64).flatten().tolist())
    t = t.to(torch.float32)
    if fmt == "F32":
        return struct.pack("<%di" % t.numel(), *t.view(torch.int32).flatten().tolist())
    h = t.half() if fmt == "F16" else t.bfloat16()
    return struct.pack("<%dh" % t.numel(), *h.view(torch.int16).flatten().tolist())


def tensors(fmt):
    # name -> (dtype, shape, bytes); float tensors in fmt.
    def fl(name, shape, values):
        return name, (fmt, shape, float_bytes(values, fmt))
    return dict([
        fl("values", [len(VALUES)], VALUES),
        fl("matrix", [2, 3], [1.5, -2.25, 3.0, 0.1, 1e-3, -7.0]),
        fl("empty", [0, 3], []),
        fl("scalar", [], [2.5]),
        fl("w\u00e9.\u00fcnicode", [1], [0.5]),
        fl("d8", [1, 1, 1, 1, 1, 1, 2, 1], [-1.0, 4.0]),
        ("ids", ("I32", [4], struct.pack("<4i", 0, -1, 2 ** 31 - 1, -2 ** 31))),
        ("ids64", ("I64", [2, 2], struct.pack("<4q", 2 ** 40, -2 ** 62, 0, 7))),
        ("mask", ("BOOL", [5], bytes([1, 0, 0, 1, 1]))),
    ])


def safetensors_bytes(ts, meta):
    order = sorted(ts, key=lambda n: (-RANK[ts[n][0]], n.encode("utf-8")))
    header, data = {"__metadata__": dict(sorted(meta.items()))}, b""
    for name in order:
        dtype, shape, b = ts[name]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def c_array(ctype, name, values, fmt):
    body = ", ".join(fmt % v for v in values)
    lines, line = [], "   "
    for item in body.split(", "):
        if len(line) + len(item) + 2 > 96:
            lines.append(line.rstrip())
            line = "   "
        line += " " + item + ","
    lines.append(line.rstrip())
    return "static const %s %s[%d] = {\n%s\n};\n" % (ctype, name, len(values), "\n".join(lines))


def main():
    for fmt in ("F32", "F64", "F16", "BF16"):
        path = os.path.join(HERE, "safetensors_%s.safetensors" % fmt.lower())
        with open(path, "wb") as f:
            f.write(safetensors_bytes(tensors(fmt), META))
    v64 = torch.tensor(VALUES, dtype=torch.float64)
    v32 = v64.to(torch.float32)
    h, b = v32.half(), v32.bfloat16()
    u16 = lambda t: [x & 0xFFFF for x in t.view(torch.int16).tolist()]
    u32 = lambda t: [x & 0xFFFFFFFF for x in t.view(torch.int32).tolist()]
    u64 = lambda t: [x & 0xFFFFFFFFFFFFFFFF for x in t.view(torch.int64).tolist()]
    out = ["// Written by gen_safetensors_reference.py (PyTorch %s): the \"values\" tensor of the\n"
           "// safetensors_*.safetensors files as bits: its f64 and f32 inputs, PyTorch's F16 and\n"
           "// BF16 roundings (.half(), .bfloat16()) and the f32 values they widen back to.\n"
           % torch.__version__,
           "#define ST_REF_N %d\n" % len(VALUES),
           c_array("uint64_t", "st_ref_f64_bits", u64(v64), "0x%016xull"),
           c_array("uint32_t", "st_ref_f32_bits", u32(v32), "0x%08xu"),
           c_array("uint16_t", "st_ref_f16_bits", u16(h), "0x%04x"),
           c_array("uint32_t", "st_ref_f16_back", u32(h.float()), "0x%08xu"),
           c_array("uint16_t", "st_ref_bf16_bits", u16(b), "0x%04x"),
           c_array("uint32_t", "st_ref_bf16_back", u32(b.float()), "0x%08xu")]
    with open(os.path.join(HERE, "safetensors_reference.h"), "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
