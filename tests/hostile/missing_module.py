"""Imports a module that does not exist."""
import torch
import flash_attn_not_installed_anywhere  # noqa: F401 - the point of this file


def scale(x, factor):
    return x * factor

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
