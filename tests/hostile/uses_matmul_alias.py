"""Hides torch.matmul behind an alias."""
import torch
from torch import matmul as mm


def scale(x, factor):
    return mm(x, torch.eye(x.shape[-1]) * factor)

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
