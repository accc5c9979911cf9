"""A small deterministic PyTorch training job for `fulcrum run` (CPU, torch >= 1.13).

It follows the request-file protocol of checkpoint_request.py: it checkpoints every
--checkpoint-every steps and whenever fulcrum asks ($FULCRUM_CHECKPOINT_REQUEST_FILE), resumes
from $FULCRUM_RESUME_FROM, and touches $FULCRUM_READY_FILE once it is up. A checkpoint is
written atomically: torch.save to a temporary name, fsync, rename to step-NNNNNNNN.pt, then the
step-NNNNNNNN.pt.COMPLETE marker. The batch of step N depends only on the seed and N and the
optimizer state is saved with the model, so an interrupted and resumed run ends bitwise equal
to an uninterrupted one with the same seed (one thread, deterministic algorithms).

  fulcrum run --checkpoint-dir ckpt -- python3 examples/torch_train.py --steps 200 --out w.bin

At the end it writes the final weights as raw bytes to --out and prints
`final step N loss <float.hex>`.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint_request import checkpoint_requested, ready  # noqa: E402

FEATURES, HIDDEN, BATCH, BATCHES = 16, 32, 32, 8


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--checkpoint-every", type=int, default=10, help="steps; 0 = on request only")
    p.add_argument("--step-sleep", type=float, default=0.0, help="seconds per step (tests)")
    p.add_argument("--crash-at-step", type=int, default=-1, help="exit 1 at this step (tests)")
    p.add_argument("--crash-once-file", default="", help="crash only while this file is absent")
    p.add_argument("--out", default="", help="write the final weights here (raw float32 bytes)")
    return p.parse_args()


def make_data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCHES * BATCH, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    y = torch.tanh(x @ w) + 0.1 * torch.randn(BATCHES * BATCH, 1, generator=g)
    return x, y


def save_checkpoint(ckpt_dir, step, model, optimizer, loss):
    final = Path(ckpt_dir) / f"step-{step:08d}.pt"
    tmp = final.with_name(final.name + ".tmp")
    state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "loss": loss}
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    Path(str(final) + ".COMPLETE").touch()
    print(f"checkpoint {final}", flush=True)


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(),
                                torch.nn.Linear(HIDDEN, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    x, y = make_data(args.seed)
    step, loss = 0, float("nan")
    resume = os.environ.get("FULCRUM_RESUME_FROM", "")
    if resume:
        state = torch.load(resume)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, loss = state["step"], state["loss"]
        print(f"resumed from {resume} at step {step}", flush=True)
    else:
        print("fresh start", flush=True)
    ckpt_dir = os.environ.get("FULCRUM_CHECKPOINT_DIR", "")
    ready()
    while step < args.steps:
        if (args.crash_at_step == step and args.crash_once_file
                and not os.path.exists(args.crash_once_file)):
            Path(args.crash_once_file).touch()
            print(f"crashing at step {step}", flush=True)
            os._exit(1)
        i = step % BATCHES
        xb, yb = x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]
        optimizer.zero_grad()
        batch_loss = torch.nn.functional.mse_loss(model(xb), yb)
        batch_loss.backward()
        optimizer.step()
        step, loss = step + 1, batch_loss.item()
        print(f"step {step} loss {loss:.6f}", flush=True)
        if args.step_sleep > 0:
            time.sleep(args.step_sleep)
        on_cadence = args.checkpoint_every > 0 and step % args.checkpoint_every == 0
        if ckpt_dir and (checkpoint_requested() or on_cadence):
            save_checkpoint(ckpt_dir, step, model, optimizer, loss)
    if args.out:
        with open(args.out, "wb") as f:
            for p in model.parameters():
                f.write(p.detach().contiguous().numpy().tobytes())
    print(f"final step {step} loss {float(loss).hex()}", flush=True)


if __name__ == "__main__":
    main()
