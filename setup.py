"""Package layout: the top-level folders install under one namespace, ``inferview.*``.

``tui/`` becomes ``inferview.tui``, ``reference/`` becomes ``inferview.reference`` and so on, so no
generic top-level name lands in site-packages. Subpackages are discovered, so adding one needs no
edit here. Metadata lives in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

TOP_LEVEL = ["tui", "reference", "graders", "challenges", "questions", "tests"]

package_dir = {"inferview": "inferview"}
packages = ["inferview"] + [f"inferview.{p}" for p in find_packages("inferview")]
for top in TOP_LEVEL:
    package_dir[f"inferview.{top}"] = top
    packages.append(f"inferview.{top}")
    packages += [f"inferview.{top}.{p}" for p in find_packages(top)]

setup(package_dir=package_dir, packages=packages)
