"""Blocks in C (libc sleep), where Python signals cannot interrupt it."""
import ctypes

import torch


def scale(x, factor):
    ctypes.CDLL(None).sleep(1000)
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
