#!/usr/bin/env python3
"""Turn every row of MosaicML's MPT training benchmark tables into data/calibration/measured.csv
rows (family `mpt`).

Source: mosaicml/llm-foundry@8c8dd48f72, scripts/train/benchmarking/README.md. The script reads a
local copy of that file (not committed), e.g.

  git -C llm-foundry show 8c8dd48f72:scripts/train/benchmarking/README.md > /tmp/mpt-readme.md
  python3 scripts/mpt-benchmark-rows.py /tmp/mpt-readme.md            # check, report new rows
  python3 scripts/mpt-benchmark-rows.py /tmp/mpt-readme.md --write    # add the new rows

Conventions (those of the rows already in measured.csv):
  id             mpt-<table>-<size>-s<seq>-g<gpus>-mb<micro>-ga<accum>
  model shape    per MPT size, scripts/train/yamls/pretrain/mpt-<size>.yaml of the same commit
                 (n_layers, d_model, n_heads; expansion_ratio 4), vocab 50368, gelu, tied
                 embeddings
  precision      amp_fp8 -> fp8; amp_bf16 and bf16 -> bf16 (mixed: MP Mode DEFAULT or PURE is
                 a torch FSDP MixedPrecision setting over fp32 sharded parameters, Composer's
                 get_mixed_precision; their gradient-reduction dtypes are not modelled)
  zero           FULL_SHARD -> 3, SHARD_GRAD_OP -> 2; dp = n_gpus (FSDP only)
  recompute      Activation Checkpointing True -> full, else none
  network        the A100 headings' 1600 Gbps per node; the H100 headings name none and the
                 rows keep 3200 Gbps per node (8 x 400 Gbps InfiniBand, the H100 nodes' usual
                 fabric; an assumption, not a figure of the source)
  value          Throughput (T/s/GPU)
  cross_entropy  fused: MPT's loss is flash-attn's fused cross entropy (llm-foundry's default
                 loss_fn 'fused_crossentropy', llmfoundry/models/mpt/modeling_mpt.py from v0.1.0
                 to b2a43a147; the pretrain yamls do not set loss_fn)
A row with Activation CPUOffload True is listed and not written: whether Composer's activation
CPU offload is what `estimate --offload activations` models has not been checked (no row at
8c8dd48f72 has it). The rows already in measured.csv must equal what the script derives for their
id, and every mpt row there must come from the README, or the script fails (exit 1).
"""
import argparse
import sys

SOURCE = "mosaicml/llm-foundry@8c8dd48f72 scripts/train/benchmarking/README.md"

# MPT size -> (n_layers, d_model, n_heads, ffn_hidden): the existing rows' shapes.
SHAPES = {
    "125m": (12, 768, 12, 3072),
    "350m": (24, 1024, 16, 4096),
    "760m": (24, 1536, 12, 6144),
    "1b": (24, 2048, 16, 8192),
    "3b": (32, 2560, 20, 10240),
    "7b": (32, 4096, 32, 16384),
    "13b": (40, 5120, 40, 20480),
    "30b": (48, 7168, 56, 28672),
    "70b": (80, 8192, 64, 32768),
}

# Table heading -> (id tag, network Gbit/s per node).
TABLES = {
    "H100 80GB BF16 (Large Scale, >= 128 GPUs)": ("h100bf16large", 3200),
    "H100 80GB BF16": ("h100bf16", 3200),
    "H100 80GB FP8": ("h100fp8", 3200),
    "A100 80GB with 1600 Gbps node-node interconnect (RoCE)": ("a100-80", 1600),
    "A100 40GB with 1600 Gbps node-node interconnect (RoCE)": ("a100-40", 1600),
}

GPUS = {"h100_80gb": "H100-80GB", "a100_80gb": "A100-80GB", "a100_40gb": "A100-40GB"}
PRECISIONS = {"amp_fp8": "fp8", "amp_bf16": "bf16", "bf16": "bf16"}
ZERO = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}
BOOL = {"True": True, "False": False}


def fail(msg):
    print("mpt-benchmark-rows: " + msg, file=sys.stderr)
    sys.exit(1)


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_tables(text):
    """Yields (heading, {column: value}) for every data row of every table."""
    heading, header = None, None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            heading, header = line.lstrip("#").strip(), None
        elif line.lstrip().startswith("|"):
            row = cells(line)
            if header is None:
                header = row
            elif all(set(c) <= set("-: ") for c in row):
                continue
            else:
                if len(row) != len(header):
                    fail("line %d: %d cells, header has %d" % (n, len(row), len(header)))
                yield n, heading, dict(zip(header, row))
        else:
            header = None


def to_row(n, heading, r):
    """Returns (id, csv line) or (id, None) with the reason the row is left out."""
    if heading not in TABLES:
        fail("line %d: table '%s' is not known" % (n, heading))
    tag, network = TABLES[heading]
    size = r["Model"]
    if size not in SHAPES:
        fail("line %d: model size '%s' is not known" % (n, size))
    layers, d_model, heads, ffn = SHAPES[size]
    seq, gpus = int(r["SeqLen (T)"]), int(r["# GPUs"])
    mb, ga, gb = int(r["MicroBatchSize"]), int(r["GradAccum"]), int(r["GlobalBatchSize"])
    if mb * ga * gpus != gb:
        fail("line %d: micro %d x accum %d x gpus %d != global %d" % (n, mb, ga, gpus, gb))
    key = "mpt-%s-%s-s%d-g%d-mb%d-ga%d" % (tag, size, seq, gpus, mb, ga)
    if BOOL[r["Activation CPUOffload"]]:
        return key, None
    try:
        gpu, precision = GPUS[r["GPU"]], PRECISIONS[r["Precision"]]
        zero = ZERO[r["Sharding Strategy"]]
        recompute = "full" if BOOL[r["Activation Checkpointing"]] else "none"
    except KeyError as e:
        fail("line %d: unknown value %s" % (n, e))
    value = int(r["Throughput (T/s/GPU)"])
    fields = [key, "throughput", "mpt", "mpt", "fsdp", "MPT-" + size, layers, d_model, heads,
              heads, ffn, 50368, "gelu", 1, seq, gpu, gpus, precision, 1, 1, 1, gpus, 1, zero,
              mb, gb, recompute, 0, "on", 8, network, value, "tokens_per_s_per_gpu", "",
              SOURCE, "", "", "", "", "fused"]
    return key, ",".join(str(f) for f in fields)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("readme", help="local copy of scripts/train/benchmarking/README.md")
    ap.add_argument("--csv", default="data/calibration/measured.csv")
    ap.add_argument("--write", action="store_true", help="add the missing rows to --csv")
    args = ap.parse_args()

    with open(args.readme) as f:
        derived = [to_row(*t) for t in parse_tables(f.read())]
    with open(args.csv) as f:
        lines = f.read().splitlines()
    existing = {l.split(",", 1)[0]: l for l in lines if l.startswith("mpt-")}

    seen, new, offload = set(), [], []
    for key, line in derived:
        if key in seen:
            fail("two README rows give id %s" % key)
        seen.add(key)
        if line is None:
            offload.append(key)
        elif key in existing:
            if existing[key] != line:
                fail("%s differs from the README:\n  csv:    %s\n  README: %s" %
                     (key, existing[key], line))
        else:
            new.append(line)
    stale = sorted(set(existing) - seen)
    if stale:
        fail("rows not in the README: " + ", ".join(stale))
    print("README rows: %d; in measured.csv: %d; new: %d; CPU offload (left out): %d" %
          (len(derived), len(existing), len(new), len(offload)))
    for key in offload:
        print("  left out (Activation CPUOffload True): " + key)
    if args.write and new:
        last = max(i for i, l in enumerate(lines) if l.startswith("mpt-"))
        lines[last + 1:last + 1] = new
        with open(args.csv, "w") as f:
            f.write("\n".join(lines) + "\n")
        print("wrote %d rows to %s" % (len(new), args.csv))


if __name__ == "__main__":
    main()
