"""A real PyTorch training job that never checkpoints: it ignores FULCRUM_CHECKPOINT_REQUEST_FILE
and writes nothing into FULCRUM_CHECKPOINT_DIR (issue 29, item 10: what `fulcrum validate` must
fail quickly). It trains a small MLP on the CPU and prints "step N loss L" per step.

  python3 torch_no_checkpoint.py --steps 1000000 --step-sleep 0.05
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--step-sleep", type=float, default=0.0, help="seconds per step")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(256, 16)
    y = torch.tanh(x @ torch.randn(16, 1))
    print("fresh start", flush=True)
    for step in range(1, args.steps + 1):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
        if args.step_sleep > 0:
            time.sleep(args.step_sleep)


if __name__ == "__main__":
    main()
