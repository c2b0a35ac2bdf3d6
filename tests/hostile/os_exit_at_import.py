"""Calls os._exit(0) while being imported."""
import os

import torch

os._exit(0)


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
