"""The one part of the package layout pyproject.toml cannot express.

The study notebooks and their configs live at the top of the checkout (``notebooks/``,
``configs/``), where researchers open them, and ship inside the package as
``cfbench.notebooks`` and ``cfbench.configs``, so an installed cfbench runs its studies from
any directory. Everything else is declared in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=find_namespace_packages(include=["cfbench", "cfbench.*"]) + ["cfbench.notebooks", "cfbench.configs"],
    package_dir={"cfbench.notebooks": "notebooks", "cfbench.configs": "configs"},
)
