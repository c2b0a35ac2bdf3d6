"""Starts children that leave the process group: a new session with an empty environment, and a double fork."""
import os
import subprocess

import torch

subprocess.Popen(["sleep", "301"], start_new_session=True, env={})
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "302"])
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
