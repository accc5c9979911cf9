#!/usr/bin/env bash
# Runs `fulcrum estimate --json` over every row of the calibration data that has a memory
# measurement (kind = memory_peak in measured.csv) and writes the memory section of
# docs/ACCURACY.md; likewise the step-time section from the throughput and step_time rows
# (time.tokens_per_second_per_gpu / time.step_seconds against the measured value): per row predicted vs measured and the error, and the median absolute error
# per group. The measured metric decides what is compared: torch max_memory_allocated ->
# allocated_bytes, max_memory_reserved -> reserved_bytes, anything else -> peak_bytes_per_gpu.
# No row is special-cased; a row the estimator refuses is listed with its error.
#
# Usage: scripts/accuracy.sh [MEASURED_CSV] [FULCRUM_BINARY]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
csv="${1:-$root/../shared/data/calibration/measured.csv}"
[ -f "$csv" ] || csv=/work/shared/data/calibration/measured.csv
bin="${2:-$root/build/fulcrum}"
out="$root/docs/ACCURACY.md"
[ -x "$bin" ] || { echo "accuracy.sh: $bin not built (cmake --build build --target fulcrum)" >&2; exit 1; }

python3 - "$csv" "$bin" "$out" <<'PY'
import csv, json, statistics, subprocess, sys
csv_path, binary, out_path = sys.argv[1:4]

def flags(row):
    args = ["estimate", "--json",
            "--layers", row["n_layers"], "--hidden", row["d_model"], "--heads", row["n_heads"],
            "--kv-heads", row["n_kv_heads"], "--ffn-hidden", row["ffn_hidden"], "--vocab", row["vocab"],
            "--mlp", row["mlp"], "--seq-len", row["seq_len"], "--gpu", row["gpu"], "--gpus", row["n_gpus"],
            "--precision", row["precision"], "--tp", row["tp"], "--pp", row["pp"], "--vpp", row["vpp"],
            "--dp", row["dp"], "--zero", row["zero"], "--micro-batch", row["micro_batch"],
            "--global-batch", row["global_batch"], "--recompute", row["recompute"],
            "--flash-attention", row["flash_attention"], "--framework", row["framework"],
            "--gpus-per-node", row["gpus_per_node"], "--network-gbps", row["network_gbps_per_node"]]
    if row["tied_embeddings"] == "1":
        args.append("--tied-embeddings")
    if row["sequence_parallel"] == "1":
        args.append("--sequence-parallel")
    return args

def compared_field(metric):
    if "max_allocated" in metric:
        return "allocated_bytes"
    if "max_reserved" in metric:
        return "reserved_bytes"
    return "peak_bytes_per_gpu"

rows, errors_by_group = [], {}
with open(csv_path, newline="") as f:
    for row in csv.DictReader(f):
        if row["kind"] != "memory_peak" or row["unit"] != "bytes":
            continue
        measured = float(row["measured_value"])
        field = compared_field(row["memory_metric"])
        run = subprocess.run([binary] + flags(row), capture_output=True, text=True)
        if run.returncode != 0:
            rows.append((row, field, measured, None, run.stderr.strip().replace("fulcrum: error: ", "")))
            continue
        predicted = json.loads(run.stdout)["memory"][field]
        error = (predicted - measured) / measured
        errors_by_group.setdefault(row["group"], []).append(abs(error))
        rows.append((row, field, measured, predicted, error))

gib = 1024 ** 3
lines = ["<!-- memory:begin (written by scripts/accuracy.sh; do not edit by hand) -->",
         "## Memory",
         "",
         "`scripts/accuracy.sh` runs `fulcrum estimate --json` with each configuration of "
         "`measured.csv` (rows with kind `memory_peak`) and compares the field that matches the "
         "measured metric: `torch.cuda.max_memory_allocated` -> `allocated_bytes` (tensors only), "
         "`max_memory_reserved` -> `reserved_bytes` (tensors + allocator reserve). Error = "
         "(predicted - measured) / measured. Nothing is tuned per row; framework constants come "
         "from the frameworks' documentation and code (see src/estimate/memory.cc).",
         "",
         "| id | framework | model (L/h/a/kv) | gpus tp/pp/dp zero | mb x seq | recompute | flash | compared | measured GiB | predicted GiB | error |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
for row, field, measured, predicted, error in rows:
    shape = f'{row["n_layers"]}/{row["d_model"]}/{row["n_heads"]}/{row["n_kv_heads"]}'
    layout = f'{row["n_gpus"]} {row["tp"]}/{row["pp"]}/{row["dp"]} z{row["zero"]}'
    common = (f'| {row["id"]} | {row["framework"]} | {shape} | {layout} | '
              f'{row["micro_batch"]} x {row["seq_len"]} | {row["recompute"]} | {row["flash_attention"]} | '
              f'{field} | {measured / gib:.2f} | ')
    if predicted is None:
        lines.append(common + f"refused | {error} |")
    else:
        lines.append(common + f"{predicted / gib:.2f} | {error * 100:+.1f} % |")
lines += ["", "| group | rows | median absolute error |", "|---|---|---|"]
all_errors = []
for group, errs in sorted(errors_by_group.items()):
    all_errors += errs
    lines.append(f"| {group} | {len(errs)} | {statistics.median(errs) * 100:.1f} % |")
refused = sum(1 for r in rows if r[3] is None)
if all_errors:
    lines.append(f"| all memory rows | {len(all_errors)} | {statistics.median(all_errors) * 100:.1f} % |")
lines += ["", f"Rows refused by the estimator: {refused} (listed above with the reason).", "",
          "### What the memory model counts (per GPU)", "",
          "- Model states, bytes per parameter before sharding (weights / gradients / optimizer incl. "
          "fp32 master): megatron bf16 2/4/12, fp16 2/2/16 (fp32 main-grad copy), fp32 4/4/8 "
          "(Megatron dist_optimizer.md: 18 -> 6+12/d, 20 -> 4+16/d, 16 -> 8+8/d); deepspeed 2/2/12 "
          "with DeepSpeed's estimator accounting (ZeRO-1/2: 4P + 16P/N, ZeRO-3: 4 x largest layer + "
          "18P/N; memory.rst) plus one 5e8-element reduce bucket; fsdp/hf (PyTorch AMP): fp32 "
          "parameters are the master copy, 4/4/8, plus a 2-byte autocast weight cache under DDP. "
          "ZeRO stage >= 1 shards the optimizer, >= 2 gradients, 3 weights over dp (ZeRO Table 1). "
          "AdamW 8 bytes of states, SGD momentum 4, 8-bit Adam 2; pure bf16 halves the states.",
          "- Activations: Korthikanti et al. 2022 Table 2, counted tensor by tensor (so GQA, SwiGLU "
          "and dropout-free models follow the same rules); flash attention keeps an fp32 "
          "log-sum-exp instead of the s^2 scores; selective recompute drops the core-attention "
          "term (Megatron) or, for fsdp, follows torchtitan's op-level policy (saves flash "
          "attention and every other matmul); full recompute keeps 2sbh per layer. Pipeline: the "
          "first stage holds min(pp, micro-batches) micro-batches x (1 + (pp-1)/(pp x vpp)).",
          "- Logits and loss: bytes per logit element megatron 6 (bf16 + fp32 softmax), fsdp 10, "
          "hf/deepspeed 12 (fp32 logits kept in the output), divided by tp (vocab parallel).",
          "- Buffers: DDP gradient buckets (a second gradient copy), FSDP unsharded units "
          "(6 bytes per parameter of the largest unit), DeepSpeed ZeRO-3 gather (4 x largest layer), "
          "QLoRA dequantised matrix.",
          "- Outside the tensors: CUDA context 1343 MiB (HF model_memory_anatomy) and an allocator "
          "reserve of 5 % (megatron, fsdp) or 10 % (deepspeed, hf) of the allocated peak - the "
          "reserve fractions are fulcrum's assumption, not calibrated.",
          "",
          "Known gaps: the Megatron rows with tp > 1 are under-predicted by 35-45 %. Their measured "
          "peak barely drops from tp 1 (2.53 GiB) to tp 2 (2.48 GiB). Run with --flash-attention off "
          "the same rows come out at 2.30 GiB (-7 %) and 1.44 GiB (-3 %): the missing memory is the "
          "size of the unfused attention scores. The tp4 tests use Megatron's local, non-Transformer-"
          "Engine implementation (their names lack 'te'), whose attention is unfused, so the CSV's "
          "flash_attention = on is doubtful for them; the table above keeps the CSV's value. "
          "Context parallelism (torchtitan cp4 row) is not modelled, so that row is refused.",
          "<!-- memory:end -->"]
section = "\n".join(lines) + "\n"

# --- step time: throughput (tokens/s/GPU) and step-time (s) rows -------------------------------
trows, terrors = [], {}
with open(csv_path, newline="") as f:
    for row in csv.DictReader(f):
        if row["kind"] not in ("throughput", "step_time"):
            continue
        measured = float(row["measured_value"])
        run = subprocess.run([binary] + flags(row), capture_output=True, text=True)
        if run.returncode != 0:
            trows.append((row, measured, None, run.stderr.strip().replace("fulcrum: error: ", ""), None))
            continue
        t = json.loads(run.stdout)["time"]
        if t is None:
            trows.append((row, measured, None, "no step time (GPU peak unknown)", None))
            continue
        predicted = t["tokens_per_second_per_gpu"] if row["kind"] == "throughput" else t["step_seconds"]
        error = (predicted - measured) / measured
        terrors.setdefault(row["group"], []).append(abs(error))
        trows.append((row, measured, predicted, error, t["mfu"]))
tl = ["<!-- time:begin (written by scripts/accuracy.sh; do not edit by hand) -->",
      "## Step time",
      "",
      "`scripts/accuracy.sh` runs `fulcrum estimate --json` with each configuration of "
      "`measured.csv` of kind `throughput` (compares `time.tokens_per_second_per_gpu`) or "
      "`step_time` (compares `time.step_seconds`). Error = (predicted - measured) / measured. "
      "The efficiency constants (src/estimate/compute.h, `TimeCalibration`) were fitted on these "
      "same rows (coordinate descent on median + mean/2 of the absolute error, one set of constants "
      "for all rows, nothing per row), so this is an in-sample error: expect larger errors on "
      "setups unlike these (other GPUs, PCIe, slow networks, non-transformer models).",
      "",
      "| id | model (L/h/a/kv) | gpu x n | tp/pp/vpp/dp zero | mb x seq | recompute | flash | measured | predicted | MFU | error |",
      "|---|---|---|---|---|---|---|---|---|---|---|"]
for row, measured, predicted, error, mfu in trows:
    shape = f'{row["n_layers"]}/{row["d_model"]}/{row["n_heads"]}/{row["n_kv_heads"]}'
    layout = f'{row["tp"]}/{row["pp"]}/{row["vpp"]}/{row["dp"]} z{row["zero"]}'
    unit = "tok/s/GPU" if row["kind"] == "throughput" else "s/step"
    common = (f'| {row["id"]} | {shape} | {row["gpu"]} x {row["n_gpus"]} | {layout} | '
              f'{row["micro_batch"]} x {row["seq_len"]} | {row["recompute"]} | {row["flash_attention"]} | '
              f'{measured:g} {unit} | ')
    if predicted is None:
        tl.append(common + f"refused | | {error} |")
    else:
        tl.append(common + f"{predicted:.4g} | {mfu * 100:.1f} % | {error * 100:+.1f} % |")
tl += ["", "| group | rows | median absolute error |", "|---|---|---|"]
tall = []
for group, errs in sorted(terrors.items()):
    tall += errs
    tl.append(f"| {group} | {len(errs)} | {statistics.median(errs) * 100:.1f} % |")
if tall:
    tl.append(f"| all time rows | {len(tall)} | {statistics.median(tall) * 100:.1f} % |")
    tl.append(f"| (mean absolute error, all) | {len(tall)} | {statistics.mean(tall) * 100:.1f} % |")
tl += ["", f"Rows refused: {sum(1 for r in trows if r[2] is None)}.", "<!-- time:end -->"]
time_section = "\n".join(tl) + "\n"

try:
    with open(out_path) as f:
        text = f.read()
except FileNotFoundError:
    text = "# Accuracy\n\nPrediction error of fulcrum's estimators against published measurements " \
           "(../shared/data/calibration/measured.csv).\n\n"
begin, end = text.find("<!-- memory:begin"), text.find("<!-- memory:end -->")
if begin >= 0 and end >= 0:
    text = text[:begin] + section + text[end + len("<!-- memory:end -->\n"):]
else:
    text = text.rstrip("\n") + "\n\n" + section
begin, end = text.find("<!-- time:begin"), text.find("<!-- time:end -->")
if begin >= 0 and end >= 0:
    text = text[:begin] + time_section + text[end + len("<!-- time:end -->\n"):]
else:
    text = text.rstrip("\n") + "\n\n" + time_section
with open(out_path, "w") as f:
    f.write(text)
print(section)
print(time_section)
PY
