"""Reads an unmapped address through ctypes."""
import ctypes

import torch


def scale(x, factor):
    ctypes.string_at(0x7EAD00000000, 16)
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
